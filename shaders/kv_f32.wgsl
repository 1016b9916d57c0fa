// The KV cache in f32: a key's or value's 4 values are a vec4<f32>, 2 of them a vec2<f32>. The kernels
// that read or write the cache take its words through kv4, kv2 and to_kv2 (kv_f16.wgsl packs them).

alias Kv4 = vec4<f32>;
alias Kv2 = vec2<f32>;

fn kv4(x: Kv4) -> vec4<f32> {
    return x;
}

fn kv2(x: Kv2) -> vec2<f32> {
    return x;
}

fn to_kv2(v: vec2<f32>) -> Kv2 {
    return v;
}
