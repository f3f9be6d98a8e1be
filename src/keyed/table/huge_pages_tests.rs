use super::{huge_page_span, HUGE_PAGE};

#[test]
fn span_is_the_whole_huge_pages_inside() {
    let h = HUGE_PAGE;
    assert_eq!(huge_page_span(4 * h, 3 * h), Some((4 * h, 3 * h)));
    assert_eq!(huge_page_span(4 * h + 16, 3 * h), Some((5 * h, 2 * h)));
    assert_eq!(huge_page_span(4 * h - 16, 2 * h + 32), Some((4 * h, 2 * h)));
    assert_eq!(
        huge_page_span(4 * h + 16, h),
        None,
        "straddles one boundary"
    );
    assert_eq!(huge_page_span(16, h - 32), None, "smaller than a huge page");
    assert_eq!(
        huge_page_span(usize::MAX - 15, 16),
        None,
        "no overflow at the top"
    );
}
