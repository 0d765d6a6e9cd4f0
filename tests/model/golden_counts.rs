//! Golden state counts: exact numbers of distinct states and transitions per protocol and
//! mesh size, with and without partial-order reduction. A change to the semantics, the
//! protocols or the reduction that moves a count must say why in its commit.

use semcheck::checker::{explore, Config, Reduction, Verdict};

/// (protocol, N, reduced states, reduced transitions, full states, full transitions)
const GOLDEN: &[(&str, usize, u64, u64, u64, u64)] = &[
    ("ppermute", 2, 38, 43, 95, 208),
    ("ppermute", 3, 92, 106, 887, 2940),
    ("all_gather", 2, 44, 49, 152, 328),
    ("all_gather", 3, 305, 347, 4497, 15741),
    ("psum", 2, 180, 193, 1470, 4504),
    ("psum", 3, 1002, 1085, 61254, 283332),
    ("psum_scatter", 2, 327, 342, 11130, 39780),
    ("tc_exchange", 2, 70, 76, 184, 384),
    ("producer_consumer", 2, 24, 24, 43, 62),
];

#[test]
fn state_counts_are_pinned() {
    for &(protocol, n, rs, rt, fs, ft) in GOLDEN {
        let program = semcheck::catalogue_program(protocol, None, n, 1).unwrap();
        let reduced = explore(&program, &Config::default());
        let full = explore(&program, &Config { reduction: Reduction::None, ..Config::default() });
        assert_eq!(reduced.verdict, Verdict::Proved, "{protocol} N={n}");
        assert_eq!(full.verdict, Verdict::Proved, "{protocol} N={n}");
        assert_eq!((reduced.stats.states, reduced.stats.transitions), (rs, rt), "{protocol} N={n} reduced");
        assert_eq!((full.stats.states, full.stats.transitions), (fs, ft), "{protocol} N={n} full");
    }
}

/// One row of [`GOLDEN_ASSUMPTIONS`].
type AssumptionRow = (&'static str, usize, &'static str, &'static str, u64, u64, u64, u64);

/// (protocol, N, --dma-order, --dma-landing, reduced states, reduced transitions, full
/// states, full transitions) of the correct kernels under the other assumptions: the cost
/// of each assumption. With reduction every count equals the default's; without it,
/// pair-fifo removes the orders in which a pair's DMAs overtake each other (all_gather and
/// psum_scatter keep two DMAs of one pair in flight). `cells` changes nothing: every copy
/// of the seed kernels is of one cell.
const GOLDEN_ASSUMPTIONS: &[AssumptionRow] = &[
    ("ppermute", 3, "pair-fifo", "whole", 92, 106, 887, 2940),
    ("all_gather", 3, "pair-fifo", "whole", 305, 347, 3957, 13320),
    ("all_gather", 3, "any", "cells", 305, 347, 4497, 15741),
    ("all_gather", 3, "pair-fifo", "cells", 305, 347, 3957, 13320),
    ("psum", 3, "pair-fifo", "whole", 1002, 1085, 61254, 283332),
    ("psum_scatter", 2, "pair-fifo", "whole", 327, 342, 9916, 34160),
    ("psum_scatter", 2, "any", "cells", 327, 342, 11130, 39780),
    ("tc_exchange", 2, "pair-fifo", "cells", 70, 76, 184, 384),
    ("producer_consumer", 2, "pair-fifo", "cells", 24, 24, 43, 62),
];

#[test]
fn state_counts_under_each_assumption_are_pinned() {
    use semcheck::model::{DmaLanding, DmaOrder, Semantics};
    for &(protocol, n, order, landing, rs, rt, fs, ft) in GOLDEN_ASSUMPTIONS {
        let semantics = Semantics {
            dma_order: DmaOrder::from_name(order).unwrap(),
            dma_landing: DmaLanding::from_name(landing).unwrap(),
        };
        let case = semcheck::catalogue_case(protocol, None, n).unwrap().semantics(semantics);
        let program = semcheck::program(&case).unwrap();
        let reduced = explore(&program, &Config::default());
        let full = explore(&program, &Config { reduction: Reduction::None, ..Config::default() });
        assert_eq!(reduced.verdict, Verdict::Proved, "{case}");
        assert_eq!(full.verdict, Verdict::Proved, "{case}");
        assert_eq!((reduced.stats.states, reduced.stats.transitions), (rs, rt), "{case} reduced");
        assert_eq!((full.stats.states, full.stats.transitions), (fs, ft), "{case} full");
    }
}
