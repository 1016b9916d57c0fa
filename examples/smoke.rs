fn main() {
    let gpu = pollster::block_on(wick::gpu::Gpu::new()).unwrap();
    eprintln!("{}", gpu.describe());
    let src = wick::gguf::FileSource::open("models/SmolLM2-135M-Instruct.Q4_1.gguf").unwrap();
    let t = std::time::Instant::now();
    let mut e = wick::engine::Engine::load(gpu, &src, &Default::default(), &mut |_, _| {}).unwrap();
    eprintln!(
        "loaded in {:?}, {} dispatches",
        t.elapsed(),
        e.stats.dispatches_per_token
    );
    let mut logits = e.prefill(&[504, 3575, 282, 4649, 314]).unwrap();
    let mut out = vec![];
    for _ in 0..10 {
        let id = wick::sampler::argmax(&logits);
        let mut s = logits.clone();
        s.sort_by(|a, b| b.total_cmp(a));
        eprintln!("{id} top {} gap {}", s[0], s[0] - s[1]);
        out.push(id);
        logits = e.step(id, true).unwrap().unwrap();
    }
    eprintln!(
        "{:?} {:?}/step",
        out,
        e.stats.step_time / e.stats.steps as u32
    );
}
