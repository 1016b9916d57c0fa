// Grouped-query attention's keys (attend.wgsl): query head h reads kv head h / (n_head / n_kv_head),
// key and value of head_dim floats each. The kernel's P has n_head, n_kv_head and head_dim.

fn head_keys(h: u32) -> Keys {
    let kvh = h / (P.n_head / P.n_kv_head);
    return Keys(P.n_kv_head * P.head_dim, kvh * P.head_dim, P.head_dim, P.head_dim);
}
