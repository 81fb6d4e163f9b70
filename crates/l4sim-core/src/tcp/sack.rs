//! The SACK scoreboard's range set: which segments above snd_una the receiver has SACKed,
//! as disjoint half-open ranges in a BTreeMap. Adding a SACK block visits only the parts
//! not already SACKed (amortised O(log n + newly SACKed) per ACK, instead of Linux's
//! per-skb walk with its SACK cache), so repeated blocks cost nothing.

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct SackedRanges {
    /// start -> end (exclusive), disjoint and non-adjacent.
    map: BTreeMap<u32, u32>,
}

impl SackedRanges {
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// Highest SACKed segment + 1 (Linux `fackets`-style right edge), 0 if none.
    pub fn highest_end(&self) -> u32 {
        self.map.iter().next_back().map(|(_, &e)| e).unwrap_or(0)
    }
    /// Record [s, e) as SACKed; `newly(a, b)` is called for each sub-range not SACKed before.
    pub fn add(&mut self, s: u32, e: u32, mut newly: impl FnMut(u32, u32)) {
        if s >= e {
            return;
        }
        let mut new_s = s;
        let mut new_e = e;
        let mut cursor = s;
        if let Some((&a, &b)) = self.map.range(..=s).next_back() {
            if b >= s {
                new_s = a;
                cursor = cursor.max(b);
                new_e = new_e.max(b);
                self.map.remove(&a);
            }
        }
        while let Some((&a, &b)) = self.map.range(s..=e).next() {
            if cursor < a {
                newly(cursor, a.min(e));
            }
            cursor = cursor.max(b);
            new_e = new_e.max(b);
            self.map.remove(&a);
        }
        if cursor < e {
            newly(cursor, e);
        }
        self.map.insert(new_s, new_e);
    }
    /// Forget everything below `una` (cumulatively ACKed).
    pub fn trim_below(&mut self, una: u32) {
        while let Some((&a, &b)) = self.map.iter().next() {
            if a >= una {
                break;
            }
            self.map.remove(&a);
            if b > una {
                self.map.insert(una, b);
                break;
            }
        }
    }
    pub fn clear(&mut self) {
        self.map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_blocks_report_only_new_segments() {
        let mut r = SackedRanges::default();
        let mut got = vec![];
        r.add(5, 8, |a, b| got.push((a, b)));
        r.add(5, 10, |a, b| got.push((a, b)));
        r.add(12, 14, |a, b| got.push((a, b)));
        r.add(3, 15, |a, b| got.push((a, b)));
        assert_eq!(
            got,
            vec![(5, 8), (8, 10), (12, 14), (3, 5), (10, 12), (14, 15)]
        );
        assert_eq!(r.highest_end(), 15);
        r.trim_below(9);
        let mut again = vec![];
        r.add(9, 15, |a, b| again.push((a, b)));
        assert!(again.is_empty());
    }
}
