//! Embeddings on the engine: an input run from position 0 through the hidden-state plan
//! (`Forward::hidden`), the rows its pooling needs read back, pooled and projected on the host.

use super::{cast, Engine, Run};
use crate::embeddings::{Pooler, Pooling};
use crate::Error;

impl Engine {
    /// How `embed` pools; None where the engine was loaded without embeddings (a chat model not
    /// asked for them, `LoadOptions::pooling`).
    pub fn pooling(&self) -> Option<Pooling> {
        self.pooling
    }

    /// The length of the vectors `embed` gives; None as `pooling`.
    pub fn embedding_width(&self) -> Option<usize> {
        let projected = self.forward.pooled_projections.last().map(|p| p.rows);
        let width = self.forward.hidden.as_ref().map(|h| h.width as usize);
        width.map(|w| projected.unwrap_or(w))
    }

    /// The embedding of `tokens` (a whole input, from position 0: the cache is overwritten and left
    /// empty): each token's hidden state after the final norm, pooled (`pooling`), then through the
    /// file's projections where it has them (`Forward::pooled_projections`). Not normalized
    /// (`embeddings::normalize`).
    pub async fn embed(&mut self, tokens: &[u32]) -> Result<Vec<f32>, Error> {
        let (Some(pooling), Some(hidden)) = (self.pooling, &self.forward.hidden) else {
            return Err(Error::Model(
                "the model has no pooling to embed with (a chat model: name one to load it for embeddings)".into(),
            ));
        };
        let (batch, width) = (hidden.plan.batch as usize, hidden.width as usize);
        if tokens.is_empty() {
            return Err(Error::Model("an empty input".into()));
        }
        if tokens.len() > self.n_ctx as usize {
            return Err(Error::ContextFull(self.n_ctx));
        }
        self.rewind(0);
        let mut pooler = Pooler::new(pooling, width);
        for (i, chunk) in tokens.chunks(batch).enumerate() {
            let rows = pooling.rows_needed(i * batch, chunk.len(), tokens.len());
            let rows = (rows.start as u32, rows.end as u32);
            if let Some(states) = self.run(Run::Hidden { rows }, chunk).await? {
                pooler.add(&cast::<f32>(states));
            }
        }
        self.rewind(0);
        let pooled = pooler.finish();
        let projections = &self.forward.pooled_projections;
        Ok(projections.iter().fold(pooled, |v, p| p.apply(&v)))
    }
}
