//! Golden state counts: exact numbers of distinct states and transitions per protocol and
//! mesh size, with and without partial-order reduction. A change to the semantics, the
//! protocols or the reduction that moves a count must say why in its commit.

use semcheck::checker::{explore, Config, Reduction, Verdict};

/// (protocol, N, reduced states, reduced transitions, full states, full transitions)
const GOLDEN: &[(&str, usize, u64, u64, u64, u64)] = &[
    ("ppermute", 2, 17, 16, 95, 208),
    ("ppermute", 3, 25, 24, 887, 2940),
    ("all_gather", 2, 23, 22, 152, 328),
    ("all_gather", 3, 49, 48, 4497, 15741),
    ("psum", 2, 75, 74, 1470, 4504),
    ("psum", 3, 145, 144, 61254, 283332),
    ("psum_scatter", 2, 147, 146, 11130, 39780),
    ("tc_exchange", 2, 32, 32, 184, 384),
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
