// The subgroup probe of ruda's WebGPU driver (ruda_wgpu/adapters.py): each unit of a cube of
// 64 writes the subgroup width where its lane is its position modulo that width, else 0.

@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32, @builtin(subgroup_size) n: u32,
        @builtin(subgroup_invocation_id) lane: u32) {
    o[i] = select(0u, n, lane == i % n);
}
