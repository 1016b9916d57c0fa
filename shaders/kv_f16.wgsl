// The KV cache in f16, two values to a u32 (WGSL's pack2x16float, which needs no shader-f16): half the
// memory and half the bytes attention reads. The kernels that read or write the cache take its words
// through kv4, kv2 and to_kv2 (kv_f32.wgsl keeps them as they are).

alias Kv4 = vec2<u32>;
alias Kv2 = u32;

fn kv4(x: Kv4) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(x.x), unpack2x16float(x.y));
}

fn kv2(x: Kv2) -> vec2<f32> {
    return unpack2x16float(x);
}

fn to_kv2(v: vec2<f32>) -> Kv2 {
    return pack2x16float(v);
}
