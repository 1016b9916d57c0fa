// The bindings of a prompt's chunk's attention kernels (attention_tiled.wgsl, attention_rows.wgsl,
// attention_coop.wgsl): the run's queries, the cache's keys and values, the output, the run, the
// heads' sinks (where P.sinks) and the parameters (attention_params.wgsl). Needs step.wgsl, a kv file
// and attention_params.wgsl.

@group(0) @binding(0) var<storage, read> Q: array<vec4<f32>>;       // (batch, n_head, head_dim / 4)
@group(0) @binding(1) var<storage, read> KC: array<Kv4>;            // (n_ctx, n_kv_head, head_dim / 4)
@group(0) @binding(2) var<storage, read> VC: array<Kv4>;            // (n_ctx, n_kv_head, head_dim / 4)
@group(0) @binding(3) var<storage, read_write> O: array<vec4<f32>>; // (batch, n_head, head_dim / 4)
@group(0) @binding(4) var<storage, read> step: Step;
@group(0) @binding(5) var<storage, read> SINK: array<f32>;          // (n_head), where P.sinks
@group(0) @binding(6) var<uniform> P: Params;
