// How a tile file holds a vec4 in workgroup memory (TileVec): as four f16 packed two to a word, half
// the bytes of f32 to store and to read back, each value rounded to f16 on the way in. WGSL's
// pack2x16float needs no shader-f16, so every adapter has this form; a GPU converts a pair in an
// instruction or two, where the reads of workgroup memory it halves bound a tile's inner loop.

alias TileVec = vec2<u32>;

fn to_tile(v: vec4<f32>) -> TileVec {
    return vec2<u32>(pack2x16float(v.xy), pack2x16float(v.zw));
}

fn from_tile(v: TileVec) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(v.x), unpack2x16float(v.y));
}
