//! Gemma 3's vision projector against llama.cpp's libmtmd and an f64 numpy reference
//! (tests/goldens/make_random_gemma3_vision.py): a random-weight mmproj file in llama.cpp's layout, a
//! 100 x 75 PNG that preprocessing scales and pads, the image's 16 tokens compared row by row. Then a
//! random Gemma 3 text model reading a prompt with the image's tokens in place, against llama.cpp's
//! logits after it and its greedy reply, with the prompt in runs that put the image anywhere in one.
//! Then what a user gets wrong: a text model given as the projector, a projector type Wick does not
//! run, pixels that do not match the image's size, an image longer than a prompt run.

mod common;

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
    engine.inject(rows, &[grid]).unwrap();
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

    // The same prompt again with another image: the cache is kept up to the image, not past it,
    // though the ids are the same.
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
    assert_eq!(again, prompt);
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
