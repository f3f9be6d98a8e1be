"""The SVG chart of benches/report.py: ns per check per scenario, one bar per implementation.

Standard library only; imported by report.py (which runs from this directory).
"""

import math
from xml.sax.saxutils import escape

COLORS = {"cellrate": "#1b9e77", "mutex_bucket": "#d95f02", "governor": "#7570b3"}
LABEL = {column: column.replace("_", " ") for column in COLORS}


def sig3(v):
    """`v` to 3 significant digits, trailing zeros kept: 3.00, 15.4, 159, 1304."""
    return f"{v:.{max(0, 2 - math.floor(math.log10(abs(v))))}f}" if v else "0"


def chart_svg(rows, subtitle):
    """A horizontal grouped bar chart of ns per check, log scale, values printed on the bars."""
    values = [v for _, ns, _ in rows for v in ns.values() if v > 0]
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = max(values) * 1.6  # room for the value printed after the longest bar
    left, plot_w, right, top, bar, band = 360, 540, 70, 78, 12, 52
    width, bottom = left + plot_w + right, top + band * len(rows)

    def x(v):
        return left + plot_w * math.log10(v / lo) / math.log10(hi / lo)

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{bottom + 34}" '
           f'viewBox="0 0 {width} {bottom + 34}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{bottom + 34}" fill="white"/>',
           '<text x="12" y="22" font-size="15" font-weight="bold">'
           'ns per check, median (log scale; shorter is faster)</text>',
           f'<text x="12" y="40" fill="#555">{escape(subtitle)}</text>',
           '<line x1="469" y1="48" x2="469" y2="64" stroke="black" stroke-width="2"/>'
           '<text x="478" y="60">floor (bare CAS / load / clock read)</text>']
    for i, column in enumerate(COLORS):
        svg.append(f'<rect x="{12 + i * 150}" y="50" width="14" height="12" fill="'
                   f'{COLORS[column]}"/><text x="{32 + i * 150}" y="60">{LABEL[column]}</text>')
    svg += [f'<rect x="0" y="{top + i * band}" width="{width}" height="{band}" fill="#f3f3f3"/>'
            for i in range(0, len(rows), 2)]
    decades = range(math.ceil(math.log10(hi / lo)))
    ticks = [(lo * 10 ** d * m, m == 1) for d in decades for m in (1, 2, 5)]
    for v, major in (t for t in ticks if t[0] <= hi):
        svg.append(f'<line x1="{x(v):.1f}" y1="{top}" x2="{x(v):.1f}" y2="{bottom}" '
                   f'stroke="{"#999" if major else "#ddd"}"/>')
        if major:
            svg.append(f'<text x="{x(v):.1f}" y="{bottom + 16}" text-anchor="middle">{v:g} ns'
                       '</text>')
    for i, (label, ns, floor) in enumerate(rows):
        y0 = top + i * band + 6
        svg.append(f'<text x="{left - 8}" y="{y0 + 23}" text-anchor="end">'
                   f'{escape(label)}</text>')
        for j, column in enumerate(COLORS):
            y, v = y0 + j * (bar + 1), ns.get(column)
            svg.append(f'<rect x="{left}" y="{y}" width="{max(x(v) - left, 1):.1f}" height="{bar}"'
                       f' fill="{COLORS[column]}"/><text x="{x(v) + 4:.1f}" y="{y + 10}" '
                       f'font-size="10">{sig3(v)}</text>' if v else
                       f'<text x="{left + 4}" y="{y + 10}" font-size="10" fill="#777">'
                       'not measured</text>')
        if floor:
            svg.append(f'<line x1="{x(floor):.1f}" y1="{y0 - 3}" x2="{x(floor):.1f}" '
                       f'y2="{y0 + 3 * (bar + 1) + 2}" stroke="black" stroke-width="2"/>')
    return "\n".join(svg) + "\n</svg>\n"
