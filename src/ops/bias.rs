//! Biases added after a product (shaders/add_bias.wgsl): gpt-oss biases its attention's output, its
//! router's logits and each expert's gate, up and down. An expert's bias row is the one of the expert
//! the router chose for the slot.

use crate::gpu::{Groups, Kernel, PipelineKey, Plan};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    n_used: u32,
    mode: u32,
}

/// Which bias row each value of y takes.
#[derive(Clone, Copy)]
pub enum Rows<'a> {
    /// y: (batch, n) += b: (n).
    One,
    /// y: (batch, n_used, n): each slot += its expert's row of b: (n_expert, n). `route` as
    /// moe_route writes it.
    PerSlot {
        n_used: u32,
        route: &'a wgpu::Buffer,
    },
    /// y: (batch, n) += the slots' experts' rows of b, weighted by the route's weights: a bias after
    /// the experts' down, summed as their outputs are.
    WeightedSum {
        n_used: u32,
        route: &'a wgpu::Buffer,
    },
}

/// Adds `b` to each token row of `y`, `n` values per bias row.
pub fn push(plan: &mut Plan, b: &wgpu::Buffer, rows: Rows, y: &wgpu::Buffer, n: u32) {
    let (n_used, mode, route) = match rows {
        Rows::One => (0, 0, b),
        Rows::PerSlot { n_used, route } => (n_used, 1, route),
        Rows::WeightedSum { n_used, route } => (n_used, 2, route),
    };
    let step = plan.step.clone();
    let p = Params { n, n_used, mode };
    plan.push(
        PipelineKey::new(Kernel::AddBias, None),
        &[b, route, y, &step],
        super::params(&p),
        Groups::per_token(n.div_ceil(64)),
    );
}

/// A token's route as moe_route writes it: the experts' ids and their weights.
pub type Route<'a> = (&'a [u32], &'a [f32]);

/// CPU reference for one token: y as `push` leaves it, `n` values per bias row.
pub fn reference(b: &[f32], rows: (usize, Option<Route>), y: &mut [f32], weighted: bool) {
    let (n, route) = rows;
    match route {
        None => y.iter_mut().zip(b).for_each(|(y, b)| *y += b),
        Some((ids, weights)) if weighted => {
            for (&e, &w) in ids.iter().zip(weights) {
                for i in 0..n {
                    y[i] += w * b[e as usize * n + i];
                }
            }
        }
        Some((ids, _)) => {
            for (s, &e) in ids.iter().enumerate() {
                for i in 0..n {
                    y[s * n + i] += b[e as usize * n + i];
                }
            }
        }
    }
}
