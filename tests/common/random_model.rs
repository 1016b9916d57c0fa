//! Tiny random-weight models with goldens (tests/goldens/make_random_*.py): each record names a file, its
//! size and tensor types, llama.cpp's tokenization of a short text, 24 token ids fed teacher-forced with
//! the full logits at every position from llama.cpp and from an f32 numpy reference, and llama.cpp's
//! greedy continuation. Random weights give flat logits, so all of them are compared, and the
//! perplexity of the teacher-forced ids is compared too.

use super::fidelity::{check_greedy, ids, Agreement, Tolerance};
use super::Rng;
use pollster::FutureExt as _;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use wick::engine::Engine;
use wick::gguf::{read_header, FileSource};
use wick::gpu::Gpu;
use wick::sampler::Pick;
use wick::sampler::{Adjusted, Penalties};
use wick::sampler::{SequenceStep, Want};
use wick::tokenizer::Tokenizer;

/// The penalties of the parallel steps' candidates.
const PENALTIES: Penalties = Penalties {
    repeat: 1.3,
    presence: 0.4,
    frequency: 0.2,
};

/// How one file compared.
#[derive(Debug)]
pub struct Report {
    pub file: String,
    pub types: BTreeMap<String, String>,
    pub max_error_f32: f32,
    pub max_error_llama_cpp: f32,
    pub greedy: Agreement,
    /// Perplexity of the teacher-forced ids under Wick's logits, the f32 reference's and llama.cpp's.
    pub perplexity: (f64, f64, f64),
}

/// exp(mean over positions p of -log softmax(logits[p])[ids[p + 1]]).
fn perplexity(logits: &[Vec<f32>], ids: &[u32]) -> f64 {
    let nll: f64 = logits
        .iter()
        .zip(&ids[1..])
        .map(|(l, &next)| {
            let top = l.iter().cloned().fold(f32::MIN, f32::max) as f64;
            let sum: f64 = l.iter().map(|&v| (v as f64 - top).exp()).sum();
            top + sum.ln() - l[next as usize] as f64
        })
        .sum();
    (nll / (ids.len() - 1) as f64).exp()
}

fn rows(v: &Value) -> Vec<Vec<f32>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect()
        })
        .collect()
}

/// Largest |a - b| and its index.
/// The softmax of `row` at `i`, in f64 (-inf entries count nothing).
fn softmax_at(row: &[f32], i: usize) -> f32 {
    let top = row[i] as f64;
    let sum: f64 = row.iter().map(|&v| (v as f64 - top).exp()).sum();
    (1.0 / sum) as f32
}

/// Asserts that `row` holds logits within `tolerance` of `want`'s, each of them (`at` says where).
fn assert_logits_near(row: SequenceStep, want: &[f32], tolerance: f32, at: &str) {
    let SequenceStep::Logits(logits) = row else {
        panic!("{at}: logits were asked for, not {row:?}");
    };
    let (e, i) = max_abs(&logits, want);
    assert!(
        e < tolerance,
        "{at}: logit {i} is {}, alone {}",
        logits[i],
        want[i]
    );
}

fn max_abs(a: &[f32], b: &[f32]) -> (f32, usize) {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .enumerate()
        .fold((0.0, 0), |m, (i, e)| if e > m.0 { (e, i) } else { m })
}

/// Checks every record of `golden` against Wick: `f32` bounds the distance from the numpy reference,
/// `llama_cpp` from llama.cpp (logits and greedy, by the near-tie method).
pub fn check_all(
    gpu: &Arc<Gpu>,
    golden: &Value,
    f32_tolerance: f32,
    llama_cpp: Tolerance,
) -> Vec<Report> {
    check_all_loaded(gpu, golden, (f32_tolerance, llama_cpp), super::options(64))
}

/// `check_all` with the model loaded by `options`.
pub fn check_all_loaded(
    gpu: &Arc<Gpu>,
    golden: &Value,
    (f32_tolerance, llama_cpp): (f32, Tolerance),
    options: wick::engine::LoadOptions,
) -> Vec<Report> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut reports = Vec::new();
    for record in golden["records"].as_array().unwrap() {
        let name = record["file"].as_str().unwrap();
        let path = root.join(name);
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(len, record["bytes"].as_u64().unwrap(), "{name}: size");
        let header = read_header(&FileSource::open(&path).unwrap())
            .block_on()
            .unwrap();
        let types: BTreeMap<String, String> = header
            .tensors
            .iter()
            .map(|t| (t.name.clone(), t.ty.name().to_string()))
            .collect();
        let want: BTreeMap<String, String> =
            serde_json::from_value(record["tensor_types"].clone()).unwrap();
        assert_eq!(types, want, "{name}: tensor types");
        let tokenizer = Tokenizer::from_gguf(&header).unwrap();
        let t = &record["tokenize"];
        assert_eq!(
            tokenizer.encode(t["text"].as_str().unwrap(), false),
            ids(&t["ids"]),
            "{name}: tokenization"
        );

        let source = FileSource::open(&path).unwrap();
        let mut engine = Engine::load(gpu.clone(), &source, &options, &mut |_, _| {})
            .block_on()
            .unwrap();
        let tokens = ids(&record["teacher_ids"]);
        let (want_llama, want_f32) = (rows(&record["teacher_logits"]), rows(&record["f32_logits"]));
        let (mut err_llama, mut err_f32) = (0f32, 0f32);
        let mut ours = Vec::new();
        for (pos, &t) in tokens.iter().enumerate() {
            let logits = engine.step(t, true).block_on().unwrap().unwrap();
            let (e, i) = max_abs(&logits, &want_f32[pos]);
            assert!(
                e < f32_tolerance,
                "{name} position {pos}: logit {i} is {}, the f32 reference {}",
                logits[i],
                want_f32[pos][i]
            );
            err_f32 = err_f32.max(e);
            let (e, i) = max_abs(&logits, &want_llama[pos]);
            assert!(
                e < llama_cpp.logit,
                "{name} position {pos}: logit {i} is {}, llama.cpp's {}",
                logits[i],
                want_llama[pos][i]
            );
            err_llama = err_llama.max(e);
            ours.push(logits);
        }
        // Each step after the first ran the commands recorded while the one before it ran
        // (`Engine::record_next`): the logits checked above are theirs.
        let recorded = engine.stats.totals.recorded_ahead;
        assert_eq!(
            recorded,
            tokens.len() as u64 - 1,
            "{name}: steps recorded ahead"
        );
        let ppl = (
            perplexity(&ours, &tokens),
            perplexity(&want_f32, &tokens),
            perplexity(&want_llama, &tokens),
        );
        // The ids are random, so perplexities are huge (log ~14) and their ratio magnifies any difference
        // in the mean log-likelihood: llama.cpp's 8-bit activations move its own 3% from exact math on
        // the Q4_K_M deepseek2 file. Wick must be within 0.5% of exact math, and within 0.5% of llama.cpp
        // beyond llama.cpp's own distance from exact math.
        let off = |a: f64, b: f64| (a / b - 1.0).abs();
        assert!(
            off(ppl.0, ppl.1) < 0.005 && off(ppl.0, ppl.2) < off(ppl.1, ppl.2) + 0.005,
            "{name}: perplexity {:.1}, the f32 reference's {:.1}, llama.cpp's {:.1}",
            ppl.0,
            ppl.1,
            ppl.2
        );
        let greedy = check_greedy(&mut engine, &record["greedy"], llama_cpp);
        err_llama = err_llama.max(greedy.max_error);
        let report = Report {
            file: name.to_string(),
            types,
            max_error_f32: err_f32,
            max_error_llama_cpp: err_llama,
            greedy,
            perplexity: ppl,
        };
        eprintln!(
            "{name}: max |Wick - f32 reference| {:.5}, max |Wick - llama.cpp| {:.4}; greedy {:?}; \
             perplexity {:.1}, f32 reference {:.1}, llama.cpp {:.1}",
            report.max_error_f32, report.max_error_llama_cpp, report.greedy, ppl.0, ppl.1, ppl.2
        );
        reports.push(report);
    }
    reports
}

/// `wick perplexity`'s method over the golden's text (tests/goldens/make_random_perplexity.py FAMILY
/// writes it: chunks of n_ctx, each from empty states) against llama-perplexity's over llama.cpp's
/// logits and the float64 reference's: within 0.05% of the reference, and within 0.5% of llama.cpp
/// beyond llama.cpp's own distance from the reference (its 8-bit activations on quantized files).
pub fn check_text_perplexity(gpu: &Arc<Gpu>, golden: &Value) {
    let n_ctx = golden["n_ctx"].as_u64().unwrap() as u32;
    for r in golden["records"].as_array().unwrap() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(r["model"].as_str().unwrap());
        let source = FileSource::open(&file).unwrap();
        let chunks = r["chunks"].as_u64().unwrap() as usize;
        let result = super::text_perplexity(gpu.clone(), &source, n_ctx, Some(chunks));
        assert_eq!(result.text_tokens as u64, r["n_tokens"].as_u64().unwrap());
        if let Some(scored) = r["scored_tokens"].as_u64() {
            assert_eq!(result.scored_tokens as u64, scored);
        }
        let (ours, llama, f64_ref) = (
            result.value(),
            r["llama_cpp"].as_f64().unwrap(),
            r["f32"].as_f64().unwrap(),
        );
        let off = |a: f64, b: f64| (a / b - 1.0).abs();
        eprintln!(
            "{}: PPL {ours:.2}, f64 reference {f64_ref:.2} ({:.4}%), llama.cpp {llama:.2} ({:.3}%)",
            r["model"],
            100.0 * off(ours, f64_ref),
            100.0 * off(ours, llama)
        );
        assert!(
            off(ours, f64_ref) < 0.0005,
            "{}: {ours} against {f64_ref}",
            r["model"]
        );
        assert!(
            off(ours, llama) < off(f64_ref, llama) + 0.005,
            "{}",
            r["model"]
        );
    }
}

/// Runs six sequences at once, each at its own rows of one cache (`Engine::step_parallel`):
/// sequence s is the record's teacher-forced ids rotated by 5s (mod their count), and starts s steps after the first,
/// so one step holds different tokens at different positions, and steps of five and six take the
/// products' second layer of four tokens; the last two read their first ids as prompts, both in one
/// run (`Engine::feed_sequences`), before they join. Every row of logits of the first sequence is
/// compared with the f32 reference, the others' with the one-sequence steps (which `check_all` compares with
/// it). Each step then runs again at the same places (writing the same cache rows), half its rows
/// asking for the choice, checked against the row's largest logit (its chance against the row's
/// softmax there), half for the sampler's
/// candidates after a repetition penalty, checked against the CPU's ranking of the row.
pub fn check_parallel(gpu: &Arc<Gpu>, golden: &Value, f32_tolerance: f32) {
    const SEQUENCES: usize = 6;
    const ROWS: u32 = 32; // each sequence's share of the cache
    const PROMPT: usize = 10; // what the last sequence reads before its first step
    const CHECKS: usize = 3; // sequences that check drafts together at the end
    const CHECK: u32 = 4; // the tokens each of them checks
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for record in golden["records"].as_array().unwrap() {
        let name = record["file"].as_str().unwrap();
        let source = FileSource::open(root.join(name)).unwrap();
        let options = wick::engine::LoadOptions {
            sequences: SEQUENCES as u32,
            check_tokens: CHECKS as u32 * CHECK,
            ..super::options(SEQUENCES as u32 * ROWS)
        };
        let mut engine = Engine::load(gpu.clone(), &source, &options, &mut |_, _| {})
            .block_on()
            .unwrap();
        assert_eq!(engine.sequences(), SEQUENCES as u32);
        let teacher = ids(&record["teacher_ids"]);
        let sequences: Vec<Vec<u32>> = (0..SEQUENCES)
            .map(|s| {
                let mut t = teacher.clone();
                t.rotate_left(5 * s % teacher.len());
                t
            })
            .collect();
        let mut want = vec![rows(&record["f32_logits"])];
        for tokens in &sequences[1..] {
            engine.rewind(0);
            let alone = tokens
                .iter()
                .map(|&t| engine.step(t, true).block_on().unwrap().unwrap());
            want.push(alone.collect());
        }
        let base = |s: usize| s as u32 * ROWS;
        // The last two read their first ids as prompts, together in one run (`feed_sequences`).
        let prompts = [(SEQUENCES - 2, PROMPT - 4), (SEQUENCES - 1, PROMPT)];
        let chunks: Vec<wick::gpu::Segment> = (prompts.iter())
            .map(|&(s, n)| wick::gpu::Segment::new(base(s), 0, &sequences[s][..n]))
            .collect();
        engine.feed_sequences(&chunks).block_on().unwrap();
        // Each sequence's next position.
        let mut next = [0; SEQUENCES];
        for (s, n) in prompts {
            next[s] = n;
        }
        let mut worst = 0f32;
        for step in 0..teacher.len() + SEQUENCES {
            let active: Vec<usize> = (0..SEQUENCES)
                .filter(|&s| step >= s && next[s] < teacher.len())
                .collect();
            if active.is_empty() {
                continue;
            }
            let segments: Vec<wick::gpu::Segment> = active
                .iter()
                .map(|&s| {
                    let tokens = &sequences[s][next[s]..next[s] + 1];
                    wick::gpu::Segment::new(base(s), next[s] as u32, tokens)
                })
                .collect();
            let rows = engine
                .step_parallel(&segments, &vec![Want::Logits; active.len()])
                .block_on()
                .unwrap();
            let rows: Vec<Vec<f32>> = rows
                .into_iter()
                .map(|row| match row {
                    SequenceStep::Logits(logits) => logits,
                    other => panic!("logits were asked for, not {other:?}"),
                })
                .collect();
            for (&s, logits) in active.iter().zip(&rows) {
                let pos = next[s];
                let (e, i) = max_abs(logits, &want[s][pos]);
                assert!(
                    e < f32_tolerance,
                    "{name} sequence {s} position {pos}: logit {i} is {}, alone {}",
                    logits[i],
                    want[s][pos][i]
                );
                worst = worst.max(e);
            }
            // The same step again: a choice or candidates for each row.
            // Candidates for every other row, its sequence's last three distinct tokens penalized (each as
            // if seen 1 to 3 times, every other one biased too).
            let picks: Vec<Option<Vec<Adjusted>>> = active
                .iter()
                .map(|&s| {
                    let mut penalized: Vec<Adjusted> = Vec::new();
                    for &t in sequences[s][..next[s]].iter().rev() {
                        if penalized.len() < 3 && !penalized.iter().any(|p| p.token == t) {
                            let bias = (t % 2) as f32 * 1.5;
                            penalized.push(Adjusted {
                                bias,
                                ..Adjusted::seen(t, 1 + t % 3)
                            });
                        }
                    }
                    ((s + step) % 2 == 1).then_some(penalized)
                })
                .collect();
            // Every third row among the tokens a (random) grammar allows: about half of them.
            let masks: Vec<Option<Vec<u32>>> = active
                .iter()
                .map(|&s| {
                    let mut rng = Rng((s * 1000 + step) as u64 + 1);
                    let words = rows[0].len().div_ceil(32);
                    let bits = (0..words).map(|_| (rng.next_u64() >> 16) as u32).collect();
                    ((s + step) % 3 == 0).then_some(bits)
                })
                .collect();
            let wants: Vec<Want> = picks
                .iter()
                .zip(&masks)
                .map(|(pick, mask)| {
                    let want = match pick {
                        Some(penalized) => Want::Candidates {
                            pick: Box::new(Pick::new(8, PENALTIES, penalized)),
                            log_sum_exp: true,
                        },
                        None => Want::Choice,
                    };
                    match mask {
                        Some(bits) => Want::Allowed {
                            bits: bits.clone(),
                            then: Box::new(want),
                        },
                        None => want,
                    }
                })
                .collect();
            let out = engine.step_parallel(&segments, &wants).block_on().unwrap();
            let rows_and_masks = rows.iter().zip(&masks);
            for ((&s, got), ((logits, mask), pick)) in
                active.iter().zip(out).zip(rows_and_masks.zip(&picks))
            {
                let pos = next[s];
                // The row as the grammar leaves it: the tokens it does not allow at -inf.
                let mut allowed = logits.clone();
                for (i, v) in allowed.iter_mut().enumerate() {
                    if mask
                        .as_ref()
                        .is_some_and(|m| m[i / 32] >> (i % 32) & 1 == 0)
                    {
                        *v = f32::NEG_INFINITY;
                    }
                }
                match (got, pick) {
                    (SequenceStep::Choice { id, chance }, None) => {
                        let top =
                            allowed
                                .iter()
                                .enumerate()
                                .fold(0, |b, (i, &v)| if v > allowed[b] { i } else { b });
                        assert_eq!(id as usize, top, "{name} sequence {s} position {pos}");
                        let chance = chance.expect("a greedy choice's chance");
                        let expected = softmax_at(&allowed, top);
                        assert!(
                            (chance - expected).abs() <= 1e-4 * expected.max(1e-3),
                            "{name} sequence {s} position {pos}: chance {chance}, {expected} on the CPU"
                        );
                    }
                    (SequenceStep::Candidates(ranked), Some(penalized)) => {
                        let cpu = Pick::new(8, PENALTIES, penalized).reference(&allowed);
                        let ids =
                            |c: &[(u32, f32)]| c.iter().map(|&(id, _)| id).collect::<Vec<_>>();
                        assert_eq!(
                            ids(&ranked.candidates),
                            ids(&cpu),
                            "{name} sequence {s} position {pos}"
                        );
                        for (&(_, a), &(_, b)) in ranked.candidates.iter().zip(&cpu) {
                            assert!(
                                (a - b).abs() < 1e-5,
                                "{name} sequence {s} position {pos}: {a} / {b}"
                            );
                        }
                        let mut row = logits.clone();
                        wick::sampler::penalize(&mut row, penalized, PENALTIES);
                        let top = row.iter().fold(f64::MIN, |m, &v| m.max(v as f64));
                        let sum: f64 = row.iter().map(|&v| (v as f64 - top).exp()).sum();
                        let lse = ranked.log_sum_exp.unwrap() as f64;
                        assert!(
                            (lse - (top + sum.ln())).abs() < 1e-4,
                            "{name} sequence {s} position {pos}: log-sum-exp {lse}, CPU {}",
                            top + sum.ln()
                        );
                    }
                    (got, _) => panic!("{name} sequence {s}: {got:?} for {}", pick.is_some()),
                }
                next[s] += 1;
            }
        }
        // Three sequences again from their first ids, in steps of a token each that ask the same
        // of every row: each step after the first runs the commands recorded while the one before
        // it ran (`Engine::record_next`), and its logits are checked as above.
        let again = 6.min(teacher.len());
        let recorded = engine.stats.totals.recorded_ahead;
        for pos in 0..again {
            let segments: Vec<wick::gpu::Segment> = (0..3)
                .map(|s| wick::gpu::Segment::new(base(s), pos as u32, &sequences[s][pos..pos + 1]))
                .collect();
            let rows = (engine
                .step_parallel(&segments, &[Want::Logits, Want::Logits, Want::Logits]))
            .block_on()
            .unwrap();
            for (s, row) in rows.into_iter().enumerate() {
                let at = format!("{name} sequence {s} position {pos} again");
                assert_logits_near(row, &want[s][pos], f32_tolerance, &at);
            }
        }
        assert_eq!(
            engine.stats.totals.recorded_ahead - recorded,
            again as u64 - 1,
            "{name}: parallel steps recorded ahead"
        );
        // Three sequences checking four tokens each in one step, as a server's slots check their
        // drafts: 12 rows, more than a step's few, so the plan of them all (its products in
        // tiles), each sequence's attention over its own rows, each row's logits its step's.
        assert_eq!(engine.step_plan_rows(), [4, 8, CHECKS as u32 * CHECK]);
        let at = |s: usize| 2 + 3 * s;
        let segments: Vec<wick::gpu::Segment> = (0..CHECKS)
            .map(|s| {
                let tokens = &sequences[s][at(s)..at(s) + CHECK as usize];
                wick::gpu::Segment::new(base(s), at(s) as u32, tokens)
            })
            .collect();
        let wants = vec![Want::Logits; CHECKS * CHECK as usize];
        let rows = engine.step_rows(&segments, &wants).block_on().unwrap();
        for (i, row) in rows.into_iter().enumerate() {
            let (s, pos) = (
                i / CHECK as usize,
                at(i / CHECK as usize) + i % CHECK as usize,
            );
            let at = format!("{name} sequence {s} position {pos}, checked");
            assert_logits_near(row, &want[s][pos], f32_tolerance, &at);
        }
        eprintln!("{name}: {SEQUENCES} sequences in parallel steps, max |difference| {worst:.5}");
    }
}
