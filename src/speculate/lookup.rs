//! Drafts from the text so far (prompt lookup): where the last few tokens stood before, what
//! followed them then is proposed now. Replies that quote their prompt (code edits, a document
//! summarized with its own words, JSON echoing a schema's names) repeat long runs of it.

/// The longest run of last tokens looked up, and the shortest: one token alone matches too often
/// to be worth a check.
const LONGEST: usize = 4;
const SHORTEST: usize = 2;

/// Up to `n` tokens to follow `tokens`: after the latest earlier place where the longest run of
/// `tokens`' last 4 down to 2 stood, what followed it. Empty where none stood before.
pub fn propose(tokens: &[u32], n: usize) -> Vec<u32> {
    let len = tokens.len();
    for run in (SHORTEST..=LONGEST.min(len.saturating_sub(1))).rev() {
        let last = &tokens[len - run..];
        let earlier = (0..len - run).rev().find(|&i| &tokens[i..i + run] == last);
        if let Some(i) = earlier {
            let from = i + run;
            return tokens[from..(from + n).min(len)].to_vec();
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::propose;

    #[test]
    fn proposes_what_followed_the_longest_latest_match() {
        // "1 2 3" stood at 0 and at 5; its latest earlier place is 5, followed by 9 7.
        let tokens = [1, 2, 3, 4, 5, 1, 2, 3, 9, 7, 1, 2, 3];
        assert_eq!(propose(&tokens, 2), vec![9, 7]);
        assert_eq!(propose(&tokens, 10), vec![9, 7, 1, 2, 3]);
        // The last 3 tokens (8 2 3) stood nowhere; their last 2 (2 3) did.
        let tokens = [2, 3, 6, 8, 2, 3];
        assert_eq!(propose(&tokens, 3), vec![6, 8, 2]);
        assert!(propose(&[1, 2, 3, 4], 3).is_empty());
        assert!(propose(&[5], 3).is_empty());
    }
}
