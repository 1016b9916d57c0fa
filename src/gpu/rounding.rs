//! What plans may round beyond f32 products. Each kind is switched on or off for plans made from
//! then on (`Gpu::set_rounds`): where fidelity is asked (`wick perplexity`) all are off; unless told,
//! each is on where it can pay (`Gpu::rounds_by_default`), and the tuner then offers its kernels
//! beside the f32 ones, which win where it does not pay. Tuning is kept apart by the kinds that
//! differ from the default (`Gpu::tuning_key`).

/// A kind of rounding plans may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// A prompt's products on the adapter's matrix cores (cooperative matrices,
    /// shaders/matmul_coop.wgsl): x and weights rounded to f16, sums f32. On by default where the
    /// adapter has matrix cores whose check passed.
    MatrixCores,
    /// A decode step's products of the types with that form (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K,
    /// Q5_K, Q6_K, MXFP4) on x rounded to 8 bits (`Split::PartsQ8`, integer dot products). On by
    /// default on GPUs; off where the adapter runs workgroups on the CPU, where integer dot products
    /// of four bytes lost every shape timed, and timing them made tuning half as long again
    /// (BENCHMARKS.md).
    Int8X,
    /// A prompt's products' tiles held in f16 (`MatvecKernel::f16_tile`: each weight and x rounded
    /// to f16 on the way into the tile, the sums f32, as on the matrix cores). On by default on
    /// GPUs; off where the adapter runs workgroups on the CPU, whose prompts take the tile in
    /// registers.
    F16Tiles,
}

impl Rounding {
    pub const ALL: [Rounding; 3] = [Rounding::MatrixCores, Rounding::Int8X, Rounding::F16Tiles];

    /// Its name in a tuning key.
    pub fn name(self) -> &'static str {
        match self {
            Rounding::MatrixCores => "matrix cores",
            Rounding::Int8X => "8-bit x",
            Rounding::F16Tiles => "f16 tiles",
        }
    }

    /// Its place in `Rounding::ALL`.
    pub(super) fn index(self) -> usize {
        self as usize
    }
}
