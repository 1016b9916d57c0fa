// What Multi-head Latent Attention's two forms share (mla_attention.wgsl, streaming;
// mla_attention_coop.wgsl, on the matrix cores), so that the tuner times either on the same buffers:
// their parameters and bindings. The streaming form reads a row's values through VC, the other
// through KC alone (the values are the rows' latents).

struct Params {
    rope: Rope,
    n_head: u32,
    kv_lora: u32,
    q_stride: u32,   // floats per head in QR
    q_rope: u32,     // where the rope part starts in a head of QR
    scale: f32,
    softcap: f32,    // always 0: no soft-capping
    n_split: u32,    // one token's keys split this many ways; 0: not split (a prompt's chunk, or a step)
}

@group(0) @binding(0) var<storage, read> QA: array<f32>;         // (batch, n_head, kv_lora)
@group(0) @binding(1) var<storage, read> QR: array<f32>;         // (batch, n_head, q_stride)
@group(0) @binding(2) var<storage, read> KC: array<Kv4>;         // the cache, (n_ctx, kv_lora + n_rot)
@group(0) @binding(3) var<storage, read> VC: array<Kv2>;         // the same cache
@group(0) @binding(4) var<storage, read_write> O: array<f32>;    // (batch, n_head, kv_lora); split:
                                                                 // (batch, n_head, n_split, kv_lora + 2)
@group(0) @binding(5) var<storage, read> freqs: array<f32>;      // (n_rot / 2) each pair's frequency
@group(0) @binding(6) var<storage, read> step: Step;
@group(0) @binding(7) var<uniform> P: Params;
