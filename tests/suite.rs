//! The integration tests, one binary: each file of tests/ is a module here, so that the tests'
//! shared code and the engine's generics they use are compiled and linked once (forty binaries
//! took about three quarters of a clean build's time for the workspace's own crates), and so that
//! the test threads draw from every file's tests at once rather than waiting at each binary's end.
//! `cargo test --release --test suite families::` runs one file's tests. tests/soak.rs stays a
//! binary of its own: it measures the process's resident memory.

mod common;

mod adapter_limits;
mod chat_template;
mod context;
mod device_lost;
mod embeddings;
mod families;
mod generation;
mod gguf_hostile;
mod greedy;
mod ops;
mod ops_attention;
mod ops_attention_step;
mod ops_delta_net;
mod ops_logits;
mod ops_matmul;
mod ops_mla;
mod ops_moe;
mod ops_normed;
mod ops_vision;
mod perplexity;
mod quant;
mod quantized;
mod random_deepseek2;
mod random_families;
mod random_gemma4;
mod random_llama;
mod random_moe;
mod random_qwen35;
mod reasoning;
mod sampling;
mod speculation;
mod speculation_slots;
mod steps_ahead;
mod tokenizer;
mod tokenizer_vectors;
mod tool_calls;
mod tuning;
mod vision;
mod vision_gemma4;
mod vision_qwen35;
