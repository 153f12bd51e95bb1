"""The memory allocator settings every job runs with.

glibc's malloc serves large blocks with ``mmap`` and hands them back to the kernel with ``munmap``
as soon as they are freed (and trims the top of its heap), so a forward or backward pass that
allocates the same activations layer after layer page-faults them in, zeroed by the kernel, every
time.  On 2 cores about a fifth of the default run's CPU time was spent in the kernel.  These
settings serve every block of the main thread from the heap and never give the heap back, so freed
memory is reused.  They change where tensors live, never what is computed: training steps, a score
capture and a simulation, run side by side with and without them, gave identical outputs
(docs/performance.md has the times, page faults and peak memory).  Other C libraries ignore these
variables.
"""

from __future__ import annotations

import os

GLIBC_MALLOC_ENV = {
    "MALLOC_MMAP_MAX_": "0",  # no mmap for the main thread's blocks (other threads' arenas still may)
    "MALLOC_TRIM_THRESHOLD_": str(1 << 40),  # never give the heap's top back
    "MALLOC_TOP_PAD_": str(256 * 1024 * 1024),  # grow the heap in large steps
}


def job_environment(environ=os.environ) -> dict[str, str]:
    """``environ`` with the allocator settings added; a value the user set already wins."""
    return {**GLIBC_MALLOC_ENV, **environ}
