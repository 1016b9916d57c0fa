//! The two rounds a shape's candidates are timed in unless every candidate is asked for
//! (`Tuner::every_candidate`): each form of a step's product (how a row's threads split and sum it,
//! its rows a slot, its tokens a layer) at one workgroup size (`first_round`), then the other sizes
//! of the forms that came out fastest (`second_round`). The size moves a form's time less than the
//! form does (on lavapipe, within 15% across 64 to 256 threads where forms differ by up to 4x): on
//! Qwen2.5-Coder 0.5B's decode shapes the two rounds timed 185 candidates of 339, the model's first
//! tuning took 13.1 s rather than 28.1, and each shape's winner ran within this machine's noise of
//! the full race's. Candidates that are not such a form (tiles, whose workgroup names the tile; a
//! recurrence's or an attention's forms) are all timed in the first round.

use crate::gpu::{Choice, MatvecKernel};
use web_time::Duration;

/// The workgroup size each form is timed at in the first round.
const FIRST_WORKGROUP: u32 = 128;

/// The forms timed at every workgroup size in the second round.
const FORMS_AT_EVERY_SIZE: usize = 4;

/// A candidate's form: the kernel but for its workgroup's size, where that size is all that tells
/// two candidates apart (not a tile's, whose workgroup names the tile).
fn form(candidate: Choice) -> Option<MatvecKernel> {
    match candidate {
        Choice::Matvec(k) if !k.is_tile() && k.cooperative.is_none() => {
            Some(MatvecKernel { workgroup: 0, ..k })
        }
        Choice::Matvec(_) | Choice::Recurrence(_) | Choice::Attention(_) => None,
    }
}

/// A shape's candidates timed in the first round, in their order (the default first), and those held
/// back for the second: each form's at `FIRST_WORKGROUP` threads (or, where it has no such size,
/// its first) go first, with the default and every candidate that has no form; its other sizes wait.
pub(super) fn first_round(candidates: Vec<Choice>) -> (Vec<Choice>, Vec<Choice>) {
    let first_size = |c: Choice| matches!(c, Choice::Matvec(k) if k.workgroup == FIRST_WORKGROUP);
    let (mut first, mut held) = (Vec::new(), Vec::new());
    for (i, &c) in candidates.iter().enumerate() {
        let goes_first = match form(c) {
            None => true,
            Some(f) => {
                let same = |&d: &Choice| form(d) == Some(f);
                let has_first_size = candidates.iter().any(|&d| same(&d) && first_size(d));
                let first_of_form = !first.iter().any(same);
                i == 0 || first_size(c) || (!has_first_size && first_of_form)
            }
        };
        match goes_first {
            true => first.push(c),
            false => held.push(c),
        }
    }
    (first, held)
}

/// Of the candidates held back (`first_round`), those of the `FORMS_AT_EVERY_SIZE` forms fastest
/// in the first round's `times`.
pub(super) fn second_round(times: &[(Choice, Duration)], held: &[Choice]) -> Vec<Choice> {
    let mut ranked = times.to_vec();
    ranked.sort_by_key(|&(_, t)| t);
    let mut fastest: Vec<MatvecKernel> = Vec::new();
    for f in ranked.iter().filter_map(|&(c, _)| form(c)) {
        if fastest.len() < FORMS_AT_EVERY_SIZE && !fastest.contains(&f) {
            fastest.push(f);
        }
    }
    let kept = |c: &&Choice| form(**c).is_some_and(|f| fastest.contains(&f));
    held.iter().filter(kept).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::Split;

    fn kernel(workgroup: u32, threads_per_row: u32, split: Split) -> Choice {
        Choice::Matvec(MatvecKernel {
            workgroup,
            threads_per_row,
            split,
            ..MatvecKernel::default_for(4096)
        })
    }

    #[test]
    fn the_first_round_takes_each_form_once_and_the_default() {
        let default = kernel(256, 16, Split::Chunks);
        let tile = Choice::Matvec(MatvecKernel::tile(64));
        let mut candidates = vec![default];
        for workgroup in [64, 128, 256] {
            candidates.push(kernel(workgroup, 32, Split::BlockParts));
            candidates.push(kernel(workgroup, 16, Split::Chunks));
        }
        let only_64 = kernel(64, 4, Split::Chunks);
        candidates.extend([only_64, tile]);
        let candidates: Vec<Choice> = (candidates.iter().enumerate())
            .filter(|&(i, c)| i == 0 || *c != default)
            .map(|(_, &c)| c)
            .collect();
        let (first, held) = first_round(candidates.clone());
        let parts_128 = kernel(128, 32, Split::BlockParts);
        let chunks_128 = kernel(128, 16, Split::Chunks);
        assert_eq!(first, [default, parts_128, chunks_128, only_64, tile]);
        assert_eq!(held.len() + first.len(), candidates.len());
        assert!(held.iter().all(|c| !first.contains(c)));
    }

    /// On a GPU's offers (subgroups of 32, 8-bit x) a 4096-wide Q4_K decode product's first round
    /// is a third of its candidates, and the second at most 8 more: each of the four fastest forms'
    /// two other sizes.
    #[test]
    fn a_gpus_decode_product_takes_a_third_of_its_candidates_first() {
        use crate::gguf::GgmlType;
        use crate::gpu::{Kernel, MatvecShape, Offers};
        let offers = Offers {
            subgroup_size: Some(32),
            int8_x: true,
            ..Offers::default()
        };
        let shape = MatvecShape::of(Kernel::Matvec, GgmlType::Q4_K, 4096, 4096);
        let all: Vec<Choice> = (shape.candidates(offers).into_iter())
            .map(Choice::Matvec)
            .collect();
        let (first, held) = first_round(all.clone());
        assert_eq!(first.len() + held.len(), all.len());
        assert!(
            3 * first.len() <= all.len() + 3,
            "{} of {}",
            first.len(),
            all.len()
        );
        let times: Vec<(Choice, Duration)> = (first.iter().enumerate())
            .map(|(i, &c)| (c, Duration::from_micros(100 + i as u64)))
            .collect();
        // The default, first and so fastest here, had its own size timed beside 128 already.
        assert_eq!(
            second_round(&times, &held).len(),
            2 * FORMS_AT_EVERY_SIZE - 1
        );
        eprintln!("{} of {} candidates first", first.len(), all.len());
    }

    #[test]
    fn the_second_round_times_the_fastest_forms_other_sizes() {
        let ms = Duration::from_millis;
        let forms = [1, 2, 4, 8, 16, 32].map(|t| (t, Split::Chunks));
        let times: Vec<(Choice, Duration)> = (forms.iter().enumerate())
            .map(|(i, &(t, split))| (kernel(128, t, split), ms(10 - i as u64)))
            .collect();
        let held: Vec<Choice> = (forms.iter())
            .flat_map(|&(t, split)| [64, 256].map(|wg| kernel(wg, t, split)))
            .collect();
        let second = second_round(&times, &held);
        // The four fastest: 32, 16, 8 and 4 threads a row.
        let want: Vec<Choice> = (held.iter())
            .filter(|c| matches!(c, Choice::Matvec(k) if k.threads_per_row >= 4))
            .copied()
            .collect();
        assert_eq!(second, want);
        assert_eq!(FORMS_AT_EVERY_SIZE, 4);
    }
}
