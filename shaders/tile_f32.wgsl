// How a tile file holds a vec4 in workgroup memory (TileVec): as it is.

alias TileVec = vec4<f32>;

fn to_tile(v: vec4<f32>) -> TileVec {
    return v;
}

fn from_tile(v: TileVec) -> vec4<f32> {
    return v;
}
