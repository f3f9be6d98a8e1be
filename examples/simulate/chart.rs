//! An ASCII chart of a bucket's level over time, with the requests marked under the time axis.
//!
//! Time is cut into `width` equal slots. Each column shows the level at the last nanosecond of
//! its slot, after that slot's requests, and the two rows under the axis count the slot's
//! allowed and denied requests. Every position is integer arithmetic on nanoseconds.

/// The chart's geometry: how much time and how many tokens it spans, on how many cells.
#[derive(Clone, Copy, Debug)]
pub struct Chart {
    /// Columns, one time slot each.
    pub width: usize,
    /// Rows for the level, each `burst / height` tokens tall.
    pub height: usize,
    /// The time axis runs from 0 to this, in nanoseconds (at least `width`).
    pub horizon_ns: u64,
    /// A full bucket, in nanoseconds of credit (`burst * emission_interval`).
    pub depth_ns: u64,
    /// A full bucket, in tokens.
    pub burst: u32,
}

/// What one time slot saw.
#[derive(Clone, Copy, Debug, Default)]
pub struct Column {
    /// The level at the end of the slot, in nanoseconds of credit (0 to `depth_ns`).
    pub level_ns: u64,
    /// Requests allowed during the slot.
    pub allowed: u32,
    /// Requests denied during the slot.
    pub denied: u32,
}

/// Labels of the rows under the axis; also sets the left margin.
const ALLOWED_LABEL: &str = "allowed";
const DENIED_LABEL: &str = "denied";
/// What the symbols mean, printed under every chart.
const LEGEND: [&str; 2] = [
    "  cells: # the level fills the row, : half of it or more, . less than half",
    "  marks: o/x one allowed/denied request, 2-9 that many in the slot, # ten or more",
];

impl Chart {
    /// The slot holding instant `t`: `floor(t * width / horizon)`, or `None` past the horizon.
    pub fn column_of(&self, t_ns: u64) -> Option<usize> {
        let column = u128::from(t_ns) * self.width as u128 / u128::from(self.horizon_ns);
        usize::try_from(column).ok().filter(|&c| c < self.width)
    }

    /// The last instant of slot `column`: the latest `t` with `column_of(t) == column`.
    pub fn slot_end_ns(&self, column: usize) -> u64 {
        let end = (column as u128 + 1) * u128::from(self.horizon_ns);
        // ceil(end / width) - 1; at most horizon - 1, so it fits in a u64.
        (end.div_ceil(self.width as u128) - 1) as u64
    }

    /// Draws `columns` (one per slot) as lines of ASCII text, each ending in a newline, with a
    /// legend underneath.
    pub fn render(&self, columns: &[Column]) -> String {
        let labels: Vec<String> = (0..self.height).map(|row| self.row_label(row)).collect();
        let margin = labels
            .iter()
            .map(String::len)
            .chain([ALLOWED_LABEL.len()])
            .max()
            .unwrap_or(0);
        let mut lines = Vec::new();
        for row in (0..self.height).rev() {
            let cells: String = columns.iter().map(|c| self.cell(c.level_ns, row)).collect();
            lines.push(format!("{:>margin$} |{cells}", labels[row]));
        }
        let (axis, tick_labels) = self.time_axis();
        lines.push(format!("{:>margin$} +{axis}", "0"));
        lines.push(format!("{:>margin$}  {tick_labels}", "s"));
        let allowed: String = columns.iter().map(|c| mark(c.allowed, 'o')).collect();
        let denied: String = columns.iter().map(|c| mark(c.denied, 'x')).collect();
        lines.push(format!("{ALLOWED_LABEL:>margin$} |{allowed}"));
        lines.push(format!("{DENIED_LABEL:>margin$} |{denied}"));
        lines.extend(LEGEND.map(String::from));
        lines
            .iter()
            .map(|line| format!("{}\n", line.trim_end()))
            .collect()
    }

    /// The token value at the top of `row` (row 0 is the bottom), shown on every other row
    /// counting down from the top.
    fn row_label(&self, row: usize) -> String {
        if !(self.height - 1 - row).is_multiple_of(2) {
            return String::new();
        }
        let tokens = (row + 1) as f64 * f64::from(self.burst) / self.height as f64;
        format!("{tokens:.1}")
    }

    /// One cell: `#` if the level fills its row, `:` if at least half, `.` if any of it.
    fn cell(&self, level_ns: u64, row: usize) -> char {
        // Row `row` spans levels [row, row + 1) * depth / height; compare in half rows.
        let level = 2 * u128::from(level_ns) * self.height as u128;
        let half_row = u128::from(self.depth_ns);
        let row = row as u128;
        if level >= (2 * row + 2) * half_row {
            '#'
        } else if level >= (2 * row + 1) * half_row {
            ':'
        } else if level > 2 * row * half_row {
            '.'
        } else {
            ' '
        }
    }

    /// The axis line (`-` with `+` at each tick) and the line of tick labels in seconds. The
    /// tick step is the smallest of 1, 2, 5, 10, 20, 50, ... seconds that leaves room for the
    /// labels.
    fn time_axis(&self) -> (String, String) {
        const NANOS_PER_SECOND: u128 = 1_000_000_000;
        let horizon = u128::from(self.horizon_ns);
        let width = self.width as u128;
        let widest_label = (horizon / NANOS_PER_SECOND).to_string().len() as u128;
        // Columns per tick = step * width / horizon; want at least one more than a label.
        let step = (0u32..)
            .flat_map(|exp| [1u128, 2, 5].map(|m| m * 10u128.pow(exp)))
            .find(|&step| step * NANOS_PER_SECOND * width >= (widest_label + 1) * horizon)
            .unwrap_or(1);
        let mut axis = vec!['-'; self.width];
        let mut tick_labels = vec![' '; self.width + widest_label as usize];
        let mut free_from = 0;
        let mut second = 0u128;
        while second * NANOS_PER_SECOND < horizon {
            let t_ns = (second * NANOS_PER_SECOND) as u64; // < horizon, a u64
            if let Some(column) = self.column_of(t_ns) {
                axis[column] = '+';
                let label = second.to_string();
                if column >= free_from {
                    for (i, ch) in label.chars().enumerate() {
                        tick_labels[column + i] = ch;
                    }
                    free_from = column + label.len() + 1;
                }
            }
            second += step;
        }
        (
            axis.into_iter().collect(),
            tick_labels.into_iter().collect(),
        )
    }
}

/// The mark for `count` requests in one slot: `symbol` for one, a digit for 2 to 9, `#` for
/// ten or more, a space for none.
fn mark(count: u32, symbol: char) -> char {
    match count {
        0 => ' ',
        1 => symbol,
        2..=9 => char::from_digit(count, 10).unwrap_or('#'),
        _ => '#',
    }
}
