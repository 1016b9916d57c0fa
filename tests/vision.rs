//! Gemma 3's vision projector against llama.cpp's libmtmd and an f64 numpy reference
//! (tests/goldens/make_random_gemma3_vision.py): a random-weight mmproj file in llama.cpp's layout, a
//! 100 x 75 PNG that preprocessing scales and pads, the image's 16 tokens compared row by row. Then a
//! random Gemma 3 text model reading a prompt with the image's tokens in place, against llama.cpp's
//! logits after it and its greedy reply, with the prompt in runs that put the image anywhere in one.
//! Then what a user gets wrong: a text model given as the projector, a projector type Wick does not
//! run, pixels that do not match the image's size, an image longer than a prompt run.

use crate::common;

use common::edit_gguf::{set, variant};
use common::gpu;
use common::vision::{cosine, data, picture};
use pollster::FutureExt as _;
use serde_json::Value;
use wick::engine::{Engine, LoadOptions};
use wick::gguf::Value as Meta;
use wick::gguf::{read_header, FileSource, MemorySource};
use wick::reply::Reply;
use wick::session::Session;
use wick::slots::{SlotStep, Slots};
use wick::speculate::{DraftModel, Drafter, Speculation};
use wick::vision::{Image, Projector, TokenBudget};

/// Least cosine allowed between a token's row and either reference's.
const MIN_COSINE: f64 = 0.9999;
/// Most a logit after the image prompt may differ from llama.cpp's, whose CPU products round
/// activations to f16 (the logits spread over about 2).
const LOGIT_TOLERANCE: f32 = 0.02;

fn golden() -> Value {
    common::vision::golden("tests/goldens/random-gemma3-vision.json")
}

fn load(
    gpu: std::sync::Arc<wick::gpu::Gpu>,
    source: MemorySource,
) -> Result<Projector, wick::Error> {
    let header = read_header(&source).block_on()?;
    Projector::load(
        gpu,
        (&header, &source),
        TokenBudget::default(),
        &mut |_, _| {},
    )
    .block_on()
}

fn in_memory(rel: &str) -> MemorySource {
    MemorySource {
        bytes: std::fs::read(data(rel)).unwrap(),
        name: rel.into(),
    }
}

#[test]
fn gemma3_image_tokens_match_llama_cpp_and_f64() {
    let Some(gpu) = gpu() else { return };
    let g = golden();
    let projector = load(gpu, in_memory(g["mmproj"].as_str().unwrap())).unwrap();
    let image = picture(g["image"].as_str().unwrap());
    let tokens = projector.encode(&image).block_on().unwrap();
    let width = projector.width() as usize;
    assert_eq!(projector.token_grid(&image).unwrap().tokens(), 16);
    assert_eq!(tokens.len(), 16 * width);
    for reference in ["llama_cpp", "f64"] {
        let rows = g[reference].as_array().unwrap();
        assert_eq!(rows.len(), 16);
        let mut worst = 1.0f64;
        for (got, want) in tokens.chunks(width).zip(rows) {
            let want: Vec<f64> = want
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            worst = worst.min(cosine(got, &want));
        }
        println!("{reference}: least cosine {worst:.7}");
        assert!(
            worst >= MIN_COSINE,
            "{reference}: a token's cosine is {worst}"
        );
    }
}

#[test]
fn a_text_model_or_another_projector_is_refused_by_name() {
    let Some(gpu) = gpu() else { return };
    let g = golden();
    let text = in_memory(g["text_model"].as_str().unwrap());
    let err = load(gpu.clone(), text)
        .err()
        .expect("a text model is no projector")
        .to_string();
    assert!(err.contains("mmproj") && err.contains("gemma3"), "{err}");

    let other = variant(&data(g["mmproj"].as_str().unwrap()), |metadata, _| {
        set(
            metadata,
            "clip.projector_type",
            Meta::String("qwen3vl".into()),
        )
    });
    let err = load(gpu, other)
        .err()
        .expect("an unknown projector")
        .to_string();
    assert!(
        err.contains("\"qwen3vl\"") && err.contains("Wick runs: gemma3"),
        "{err}"
    );
}

#[test]
fn pixels_that_do_not_fill_the_image_are_refused() {
    let err = Image::new(4, 3, vec![0; 35]).unwrap_err().to_string();
    assert!(err.contains("36 bytes"), "{err}");
    assert!(Image::new(0, 3, vec![]).is_err());
}

#[test]
fn the_file_source_reads_the_projector_too() {
    // The projector loads from a file as a model does, by range reads.
    let Some(gpu) = gpu() else { return };
    let g = golden();
    let source = FileSource::open(data(g["mmproj"].as_str().unwrap())).unwrap();
    let header = read_header(&source).block_on().unwrap();
    let mut last = (0, 0);
    let budget = TokenBudget::default();
    let projector = Projector::load(gpu, (&header, &source), budget, &mut |done, total| {
        last = (done, total)
    })
    .block_on()
    .unwrap();
    assert_eq!(projector.width(), 128);
    assert!(
        last.0 == last.1 && last.1 > 0,
        "progress ends at the whole file: {last:?}"
    );
}

/// The image's tokens from Wick's projector, the golden's prompt with them in place of its -1s, and
/// the text model loaded with prompt runs of `batch` tokens.
fn image_prompt(gpu: std::sync::Arc<wick::gpu::Gpu>, batch: u32) -> (Engine, Vec<u32>) {
    let g = golden();
    let projector = load(gpu.clone(), in_memory(g["mmproj"].as_str().unwrap())).unwrap();
    let image = picture(g["image"].as_str().unwrap());
    let grid = projector.token_grid(&image).unwrap();
    let rows = projector.encode(&image).block_on().unwrap();
    let source = FileSource::open(data(g["text_model"].as_str().unwrap())).unwrap();
    let options = LoadOptions {
        n_ctx: 64,
        batch: Some(batch),
        ..Default::default()
    };
    let mut engine = Engine::load(gpu, &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    assert_eq!(engine.injected_width(), Some(projector.width()));
    engine.hold_image(0, grid, rows).unwrap();
    let n_vocab = engine.n_vocab();
    let mut next_row = n_vocab;
    let prompt = g["prompt_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| match v.as_i64().unwrap() {
            -1 => {
                next_row += 1;
                next_row - 1
            }
            id => id as u32,
        })
        .collect();
    (engine, prompt)
}

#[test]
fn gemma3_reads_an_image_prompt_as_llama_cpp_does() {
    let Some(gpu) = gpu() else { return };
    let g = golden();
    // 32 tokens: text 0..9, the image 9..25, text 25..32. Runs of 64 take it whole; of 20, the
    // first ends before the image, the second takes it and 4 tokens after; of 16, the image fills
    // the second.
    for batch in [64, 20, 16] {
        let (mut engine, prompt) = image_prompt(gpu.clone(), batch);
        let label = format!("runs of {batch}");
        common::vision::check_image_prompt(&mut engine, &prompt, &g, LOGIT_TOLERANCE, &label);
    }
}

#[test]
fn an_image_longer_than_a_prompt_run_is_refused() {
    let Some(gpu) = gpu() else { return };
    let (mut engine, prompt) = image_prompt(gpu, 8);
    let err = engine.prefill(&prompt).block_on().unwrap_err().to_string();
    assert!(
        err.contains("16 tokens") && err.contains("run of 8"),
        "{err}"
    );
    // Ids past the rows injected are bad tokens, as any id past the vocabulary is.
    let (mut engine, mut prompt) = image_prompt(engine.gpu.clone(), 64);
    prompt[12] = engine.n_vocab() + 16;
    let err = engine.prefill(&prompt).block_on().unwrap_err().to_string();
    assert!(err.contains("outside the vocabulary"), "{err}");
}

/// The random Gemma 3 text model as a session with the projector attached.
fn image_session(gpu: &std::sync::Arc<wick::gpu::Gpu>) -> Session {
    image_session_checking(gpu, 0)
}

/// `image_session` whose steps may check `check_tokens` tokens at once (speculative decoding).
fn image_session_checking(gpu: &std::sync::Arc<wick::gpu::Gpu>, check_tokens: u32) -> Session {
    let g = golden();
    let source = FileSource::open(data(g["text_model"].as_str().unwrap())).unwrap();
    let options = LoadOptions {
        n_ctx: 64,
        check_tokens,
        ..Default::default()
    };
    let mut session = Session::load(gpu.clone(), &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    let projector = load(gpu.clone(), in_memory(g["mmproj"].as_str().unwrap())).unwrap();
    session.attach_projector(projector).unwrap();
    session
}

#[test]
fn a_session_places_the_image_at_its_marker_and_replies_as_llama_cpp() {
    let Some(gpu) = gpu() else { return };
    let g = golden();
    let mut session = image_session(&gpu);
    let image = picture(g["image"].as_str().unwrap());
    let text = g["prompt_text"].as_str().unwrap();
    let prompt = session
        .tokenize_prompt_with_images(text, std::slice::from_ref(&image))
        .block_on()
        .unwrap();
    let n_vocab = session.engine.n_vocab() as i64;
    let mut row = n_vocab;
    let want: Vec<u32> = (g["prompt_ids"].as_array().unwrap().iter())
        .map(|v| match v.as_i64().unwrap() {
            -1 => {
                row += 1;
                (row - 1) as u32
            }
            id => id as u32,
        })
        .collect();
    assert_eq!(
        prompt, want,
        "the prompt's tokens, the image's at mtmd's place"
    );
    let greedy: Vec<u32> = (g["greedy"].as_array().unwrap().iter())
        .map(|s| s["id"].as_u64().unwrap() as u32)
        .collect();
    let mut sampler = common::greedy();
    let reply = Reply::new(greedy.len(), &[]);
    let c = session
        .complete(&prompt, reply, &mut sampler, &mut |_| true)
        .block_on()
        .unwrap();
    assert_eq!(
        c.tokens, greedy,
        "the greedy reply (llama.cpp's gaps are all above 0.07)"
    );

    // The conversation goes on with the same image: the cache holds it, and only the new text runs.
    let mut longer = prompt.clone();
    longer.extend(&c.tokens);
    let more = session.tokenizer.encode(" more", false);
    let text_on = format!(
        "{text}{}{}",
        session.tokenizer.decode(&c.tokens, false),
        " more"
    );
    let on = session
        .tokenize_prompt_with_images(&text_on, std::slice::from_ref(&image))
        .block_on()
        .unwrap();
    longer.extend(&more);
    assert_eq!(on, longer);
    let reply = Reply::new(1, &[]);
    let c = session
        .complete(&on, reply, &mut common::greedy(), &mut |_| true)
        .block_on()
        .unwrap();
    assert!(
        c.prompt_processed <= more.len() + 1,
        "{} of {} tokens run again",
        c.prompt_processed,
        on.len()
    );

    // The same prompt again with another image: its ids are its own, so the cache is kept up to
    // the image, not past it.
    let dark = Image::new(
        image.width,
        image.height,
        image.rgb.iter().map(|v| v / 3).collect(),
    )
    .unwrap();
    let again = session
        .tokenize_prompt_with_images(text, &[dark])
        .block_on()
        .unwrap();
    assert_eq!((&again[..9], &again[25..]), (&prompt[..9], &prompt[25..]));
    assert!(
        again[9..25].iter().all(|&t| t as i64 >= n_vocab + 16),
        "the other image's ids: {again:?}"
    );
    let reply = Reply::new(1, &[]);
    let c = session
        .complete(&again, reply, &mut common::greedy(), &mut |_| true)
        .block_on()
        .unwrap();
    assert_eq!(
        c.prompt_processed,
        prompt.len() - 9,
        "the prompt from its image on"
    );

    // Without a marker the image goes first, as mtmd-cli puts it; a second image is encoded and
    // placed too, and a prompt that reuses the cache never reuses it past an image.
    let two = session
        .tokenize_prompt_with_images(
            "a <__media__> b <__media__>",
            &[image.clone(), image.clone()],
        )
        .block_on()
        .unwrap();
    let injected = two.iter().filter(|&&t| t as i64 >= n_vocab).count();
    assert_eq!(injected, 32);
    let first = session
        .tokenize_prompt_with_images("tell", std::slice::from_ref(&image))
        .block_on()
        .unwrap();
    assert_eq!(
        first[2] as i64, n_vocab,
        "BOS, <start_of_image>, then the image: {first:?}"
    );
}

/// Two slots of a server reading image prompts together in shared runs of 20 tokens, each run
/// taking an image whole (the runs end before an image, or take it past a slot's share): the
/// golden prompt's greedy reply is llama.cpp's, and the other prompt's (another image, other text)
/// is a one-sequence session's. A third request with the golden image's prompt goes on in the slot
/// that holds it and reads only what is new; one with the other image in its place does not.
#[test]
fn parallel_slots_read_image_prompts_in_shared_runs_as_llama_cpp() {
    let Some(gpu) = gpu() else { return };
    let g = golden();
    let image = picture(g["image"].as_str().unwrap());
    let dark = Image::new(
        image.width,
        image.height,
        image.rgb.iter().map(|v| v / 3).collect(),
    )
    .unwrap();
    let text = g["prompt_text"].as_str().unwrap();
    let other_text = "say what <__media__> shows";
    let greedy: Vec<u32> = (g["greedy"].as_array().unwrap().iter())
        .map(|s| s["id"].as_u64().unwrap() as u32)
        .collect();
    let mut alone = image_session(&gpu);
    let other_prompt = alone
        .tokenize_prompt_with_images(other_text, std::slice::from_ref(&dark))
        .block_on()
        .unwrap();
    // Each step reports the log-probabilities of its 20 likeliest tokens.
    let sampler = || {
        let mut sampler = common::greedy();
        sampler.log_probs = Some(20);
        sampler
    };
    let other = alone
        .complete(
            &other_prompt,
            Reply::new(greedy.len(), &[]),
            &mut sampler(),
            &mut |_| true,
        )
        .block_on()
        .unwrap();

    let source = FileSource::open(data(g["text_model"].as_str().unwrap())).unwrap();
    let options = LoadOptions {
        n_ctx: 128,
        batch: Some(20),
        sequences: 2,
        ..Default::default()
    };
    let mut s = Session::load(gpu.clone(), &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap();
    let projector = load(gpu.clone(), in_memory(g["mmproj"].as_str().unwrap())).unwrap();
    s.attach_projector(projector).unwrap();
    let mut prompts = Vec::new();
    for (text, image) in [(text, &image), (other_text, &dark)] {
        let prompt = s
            .tokenize_prompt_with_images(text, std::slice::from_ref(image))
            .block_on()
            .unwrap();
        prompts.push(prompt);
    }
    let mut slots = Slots::new(&s.engine);
    let (mut next, runs) = common::begin_slots(&mut slots, &mut s.engine, &prompts);
    // 31 and 22 tokens to read, each with an image of 16, in runs of 20: the images wait for room.
    assert!(runs >= 3, "{runs} runs");
    let mut samplers = [sampler(), sampler()];
    let mut got = [Vec::new(), Vec::new()];
    let mut first_log_probs = Vec::new();
    let tokenizer = s.tokenizer.clone();
    let ends = |token| tokenizer.is_end_of_generation(token);
    while got[0].len() < greedy.len() {
        let mut steps: Vec<SlotStep> = (samplers.iter_mut().enumerate())
            .map(|(slot, sampler)| SlotStep {
                slot,
                token: next[slot],
                draft: Default::default(),
                sampler,
                ahead: true,
            })
            .collect();
        let picked = slots
            .step(&mut s.engine, &mut steps, &ends)
            .block_on()
            .unwrap();
        for (i, picked) in picked.into_iter().enumerate() {
            let (token, log_prob) = picked.tokens[0].clone();
            if got[i].is_empty() {
                first_log_probs.push(log_prob.unwrap().top);
            }
            next[i] = token;
            got[i].push(token);
        }
    }
    assert_eq!(got[0], greedy, "the golden prompt's reply, beside another");
    assert_eq!(
        got[1], other.tokens,
        "the other prompt's reply, beside the golden"
    );
    // What follows each prompt, token by token: llama.cpp's log-softmax of its logits, and the
    // session's. An image cut between runs would not see itself whole (Gemma 3's images attend
    // both ways).
    let logits: Vec<f64> = (g["first_logits"].as_array().unwrap().iter())
        .map(|v| v.as_f64().unwrap())
        .collect();
    let log_sum_exp = logits.iter().map(|l| l.exp()).sum::<f64>().ln();
    let worst = |got: &[(u32, f32)], want: &dyn Fn(u32) -> f64| {
        (got.iter())
            .map(|&(id, lp)| (lp as f64 - want(id)).abs())
            .fold(0f64, f64::max)
    };
    let golden_worst = worst(&first_log_probs[0], &|id| logits[id as usize] - log_sum_exp);
    let alone_top = &other.log_probs[0].top;
    let alone_lp = |id| {
        alone_top
            .iter()
            .find(|t| t.0 == id)
            .map_or(f64::NAN, |t| t.1 as f64)
    };
    let alone_worst = worst(&first_log_probs[1], &alone_lp);
    eprintln!("first log-probabilities: {golden_worst:.5} from llama.cpp's, {alone_worst:.6} from the session's");
    assert!(
        golden_worst < LOGIT_TOLERANCE as f64,
        "{golden_worst} from llama.cpp's"
    );
    assert!(alone_worst < 1e-3, "{alone_worst} from the session's");

    // The golden conversation goes on: the slot holding it reads what is new.
    let mut on = prompts[0].clone();
    on.extend(&got[0]);
    on.extend(s.tokenizer.encode(" more", false));
    let slot = slots.choose(&on, |_| true).unwrap();
    assert_eq!(slot, 0);
    // It holds the prompt and the reply but its last token, which no step has run yet.
    let held = prompts[0].len() + got[0].len() - 1;
    assert_eq!(slots.begin(slot, &on).unwrap().1, on.len() - held);
    // The other image in the golden image's place: the slot keeps the text before the image.
    let swapped = s
        .tokenize_prompt_with_images(text, std::slice::from_ref(&dark))
        .block_on()
        .unwrap();
    assert_eq!(slots.begin(0, &swapped).unwrap().1, swapped.len() - 9);
}

/// The greedy reply after an image prompt is llama.cpp's with speculative decoding too: drafted by
/// lookup, whose context holds the image's tokens (never proposed), and by a draft model (the text
/// model again), which reads the prompt's text without the image.
#[test]
fn speculating_after_an_image_gives_llama_cpps_reply() {
    let Some(gpu) = gpu() else { return };
    let g = golden();
    let image = picture(g["image"].as_str().unwrap());
    let text = g["prompt_text"].as_str().unwrap();
    let greedy: Vec<u32> = (g["greedy"].as_array().unwrap().iter())
        .map(|s| s["id"].as_u64().unwrap() as u32)
        .collect();
    let draft_file = data(g["text_model"].as_str().unwrap());
    let mut session = image_session_checking(&gpu, 5);
    let draft_options = LoadOptions {
        n_ctx: 64,
        ..Default::default()
    };
    let source = FileSource::open(&draft_file).unwrap();
    let draft = DraftModel::load(
        gpu.clone(),
        &source,
        &draft_options,
        &session.tokenizer,
        &mut |_, _| {},
    )
    .block_on()
    .unwrap();
    let drafters = [
        ("lookup", Drafter::Lookup),
        ("a draft model", Drafter::Model(Box::new(draft))),
    ];
    for (name, drafter) in drafters {
        session.speculation = Some(Speculation::always(drafter, 4));
        let prompt = session
            .tokenize_prompt_with_images(text, std::slice::from_ref(&image))
            .block_on()
            .unwrap();
        let reply = Reply::new(greedy.len(), &[]);
        let c = session
            .complete(&prompt, reply, &mut common::greedy(), &mut |_| true)
            .block_on()
            .unwrap();
        let stats = session.speculation.as_ref().unwrap().stats;
        eprintln!("{name}: {stats:?}");
        assert_eq!(c.tokens, greedy, "{name}: the greedy reply");
        if name != "lookup" {
            assert!(stats.checks > 0, "{name}: no draft was checked");
        }
    }
}

#[test]
fn images_without_a_projector_or_markers_to_match_are_refused() {
    let Some(gpu) = gpu() else { return };
    let g = golden();
    let image = picture(g["image"].as_str().unwrap());
    let mut session = image_session(&gpu);
    let err = (session
        .tokenize_prompt_with_images("<__media__><__media__>", std::slice::from_ref(&image)))
    .block_on()
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("2 image markers") && err.contains("1 images"),
        "{err}"
    );

    // A projector made for a model of another width.
    let source = FileSource::open(common::model_path()).unwrap();
    let mut other = Session::load(gpu.clone(), &source, &common::options(64), &mut |_, _| {})
        .block_on()
        .unwrap();
    let err = (other.tokenize_prompt_with_images("what is it", &[image]))
        .block_on()
        .unwrap_err()
        .to_string();
    assert!(err.contains("no vision projector"), "{err}");
    let projector = load(gpu, in_memory(g["mmproj"].as_str().unwrap())).unwrap();
    let err = other.attach_projector(projector).unwrap_err().to_string();
    assert!(
        err.contains("rows of 128") && err.contains("576 wide"),
        "{err}"
    );
}
