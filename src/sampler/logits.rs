//! The CPU's side of what happens to a row of logits before a choice: the penalties on recent
//! tokens, the order top-k takes the logits in, the largest, and the softmax. The GPU's kernels
//! (shaders/penalize.wgsl, top_k.wgsl) do the same, and take these as their reference.

/// The penalties on the recent tokens, as llama.cpp applies them (`penalize`); the GPU reads them
/// as they are (shaders/pick.wgsl).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Penalties {
    /// A positive logit divided by it, a negative one multiplied.
    pub repeat: f32,
    /// Subtracted once from a token that is there.
    pub presence: f32,
    /// Subtracted once for each time a token is there.
    pub frequency: f32,
}

impl Penalties {
    pub const NONE: Penalties = Penalties {
        repeat: 1.0,
        presence: 0.0,
        frequency: 0.0,
    };

    /// Whether any of them changes a logit.
    pub fn any(&self) -> bool {
        *self != Penalties::NONE
    }
}

/// A token whose logit the sampler changes before it chooses: by its bias (OpenAI's `logit_bias`, 0
/// where none was asked), then by the penalties once it was seen among the recent tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Adjusted {
    pub token: u32,
    /// Times it is among the recent tokens (0: the penalties leave it be).
    pub seen: u32,
    pub bias: f32,
}

impl Adjusted {
    /// A token seen `seen` times, with no bias.
    pub fn seen(token: u32, seen: u32) -> Adjusted {
        Adjusted {
            token,
            seen,
            bias: 0.0,
        }
    }
}

/// The bias and the penalties, as llama.cpp applies them, on each of `tokens`: the bias added, then
/// where the token was seen, a positive logit divided by the repetition penalty, a negative one
/// multiplied, the frequency penalty taken once per time seen and the presence penalty once.
/// (shaders/penalize.wgsl does the same on the GPU.)
pub fn penalize(logits: &mut [f32], tokens: &[Adjusted], p: Penalties) {
    for t in tokens {
        let Some(l) = logits.get_mut(t.token as usize) else {
            continue;
        };
        *l += t.bias;
        if t.seen > 0 {
            *l = if *l > 0.0 {
                *l / p.repeat
            } else {
                *l * p.repeat
            };
            *l -= t.seen as f32 * p.frequency + p.presence;
        }
    }
}

/// The finite logits as (id, logit), largest first, the smaller id first among equals: the order
/// top-k takes them in.
pub fn ranked(logits: &[f32]) -> Vec<(u32, f32)> {
    let mut all: Vec<(u32, f32)> = logits
        .iter()
        .enumerate()
        .filter(|(_, l)| l.is_finite())
        .map(|(i, &l)| (i as u32, l))
        .collect();
    all.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all
}

/// The index of the largest logit (the first of equals; NaNs are passed over, and a row with
/// nothing larger than -inf gives 0). The largest value is found in 16 lanes, each taking every 16th
/// logit, which the compiler keeps in SIMD registers, and then its first place: a loop that compares
/// each logit with the best so far waits on that comparison at every step (70 us for a 128,256-token
/// vocabulary on an EPYC core, against 7 us).
pub fn argmax(logits: &[f32]) -> u32 {
    const LANES: usize = 16;
    let larger = |a: f32, b: f32| if b > a { b } else { a };
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = logits.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, &l) in lanes.iter_mut().zip(chunk) {
            *lane = larger(*lane, l);
        }
    }
    let max = (lanes.iter().chain(rest)).fold(f32::NEG_INFINITY, |m, &l| larger(m, l));
    logits.iter().position(|&l| l == max).unwrap_or(0) as u32
}

pub fn softmax(cand: &[(u32, f32)], temperature: f32) -> Vec<f32> {
    let max = cand[0].1;
    let e: Vec<f32> = cand
        .iter()
        .map(|&(_, l)| ((l - max) / temperature).exp())
        .collect();
    let sum: f32 = e.iter().sum();
    e.iter().map(|v| v / sum).collect()
}

#[cfg(test)]
mod tests {
    use super::argmax;

    /// The first index of the largest non-NaN logit, one comparison at a time.
    fn first_of_largest(logits: &[f32]) -> u32 {
        let mut best: Option<usize> = None;
        for (i, &l) in logits.iter().enumerate() {
            if !l.is_nan() && best.is_none_or(|b| l > logits[b]) {
                best = Some(i);
            }
        }
        best.filter(|&b| logits[b] > f32::NEG_INFINITY).unwrap_or(0) as u32
    }

    #[test]
    fn argmax_takes_the_first_of_the_largest() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        for n in [1, 5, 15, 16, 17, 33, 1000, 49152] {
            for _ in 0..20 {
                // Few distinct values, so that the largest repeats; some -inf and NaN.
                let row: Vec<f32> = (0..n)
                    .map(|_| match next() % 20 {
                        0 => f32::NEG_INFINITY,
                        1 => f32::NAN,
                        v => (v % 7) as f32 - 3.0,
                    })
                    .collect();
                assert_eq!(argmax(&row), first_of_largest(&row), "{row:?}");
            }
        }
        let at = |row: &[f32]| argmax(row);
        assert_eq!(at(&[f32::NEG_INFINITY; 40]), 0);
        assert_eq!(at(&[f32::NAN; 40]), 0);
        assert_eq!(at(&[f32::NAN, 1.0, 2.0, 2.0]), 2);
        assert_eq!(at(&[-0.0, 0.0]), 0);
        let mut tail = vec![0.0; 35];
        tail[34] = 1.0;
        assert_eq!(at(&tail), 34);
    }
}
