//! Drafts from text already seen (prompt lookup): where the last few tokens stood before, what
//! followed them then is proposed now. Replies that quote their prompt (code edits, a document
//! summarized with its own words, JSON echoing a schema's names) repeat long runs of it, and a
//! reply given what it is expected to say (`super::Prediction`) repeats that.

/// The longest run of last tokens looked up, and the shortest: one token alone matches too often
/// to be worth a check.
const LONGEST: usize = 4;
const SHORTEST: usize = 2;

/// Up to `n` tokens to follow `tokens`: after the latest earlier place where the longest run of
/// `tokens`' last 4 down to 2 stood, what followed it. Empty where none stood before.
pub fn propose(tokens: &[u32], n: usize) -> Vec<u32> {
    propose_from(tokens, tokens, n)
}

/// Up to `n` tokens to follow `tokens`, from `source`: after the latest place in it where the
/// longest run of `tokens`' last 4 down to 2 stands with a token after it, what follows there.
/// Empty where none stands.
pub fn propose_from(source: &[u32], tokens: &[u32], n: usize) -> Vec<u32> {
    let longest = LONGEST
        .min(tokens.len())
        .min(source.len().saturating_sub(1));
    for run in (SHORTEST..=longest).rev() {
        let last = &tokens[tokens.len() - run..];
        let found = (0..source.len() - run)
            .rev()
            .find(|&i| &source[i..i + run] == last);
        if let Some(i) = found {
            let from = i + run;
            return source[from..(from + n).min(source.len())].to_vec();
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::{propose, propose_from};

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

    #[test]
    fn proposes_from_another_text() {
        let source = [7, 1, 2, 3, 4, 5];
        assert_eq!(propose_from(&source, &[9, 9, 2, 3], 2), vec![4, 5]);
        // A match at the source's end has nothing after it.
        assert!(propose_from(&source, &[4, 5], 2).is_empty());
        assert!(propose_from(&[], &[1, 2], 2).is_empty());
        assert!(propose_from(&source, &[], 2).is_empty());
    }
}
