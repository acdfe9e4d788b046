// The last-block step of the kernels that reduce in one launch (#include "last_block.cuh":
// runtime/compile.py pastes this file in its place): every block writes its partial results,
// then asks whether it is the last of `blocks` blocks to arrive; that block alone reads all the
// partials and combines them in a fixed order, so the result does not depend on timing.
#pragma once

// True in the last of `blocks` blocks to call this (every thread of a block gets the same
// answer). Each thread fences its own writes before the barrier, so whatever any thread wrote
// before the call is visible to the last block after it. The last block resets the ticket for
// the next launch on the stream: every other block has taken its number by then.
__device__ bool arrived_last(unsigned int* ticket, unsigned int blocks) {
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        last = atomicAdd(ticket, 1u) == blocks - 1;
        if (last) *ticket = 0u;
    }
    __syncthreads();
    if (last) __threadfence();
    return last;
}
