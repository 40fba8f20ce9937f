"""Device memory for instrumented kernels' profile buffers, read back without a sync per launch.

Triton asks its profile allocator for ``grid * profile_scratch_size`` bytes before every launch of
an instrumented kernel. The pool answers with the next slice of one device buffer; the host reads
the slices back only when the pool is full (one device sync per fill, counted as a drain), at
flush() and when the session stops. A launch bigger than the whole pool gets its own buffer
(counted as oversize) and waits for the next drain like the others.
"""
import dataclasses
import threading


@dataclasses.dataclass
class Slice:
    """What Triton passes to the kernel: any object with data_ptr()."""
    ptr: int
    offset: int
    size: int
    own_buffer: object = None  # set for an oversize launch

    def data_ptr(self):
        return self.ptr


class ProfileBufferPool:
    def __init__(self, capacity, new_buffer):
        """new_buffer(nbytes) -> a 1-D uint8 torch tensor (device memory on a GPU)."""
        self.capacity = capacity
        self._new_buffer = new_buffer
        self._buffer = None
        self._used = 0
        self._lock = threading.Lock()
        self.oversize = 0

    @property
    def used(self):
        return self._used

    def buffer(self):
        return self._buffer

    def take(self, size, alignment):
        """A Slice of `size` bytes, or None when the rest of the pool is too small (drain first)."""
        with self._lock:
            if size > self.capacity:
                self.oversize += 1
                own = self._new_buffer(size + alignment)
                offset = (-own.data_ptr()) % alignment
                return Slice(own.data_ptr() + offset, offset, size, own_buffer=own)
            if self._buffer is None:
                self._buffer = self._new_buffer(self.capacity + alignment)
            base = self._buffer.data_ptr()
            offset = self._used + (-(base + self._used)) % alignment
            if offset + size > self.capacity + alignment:
                return None
            self._used = offset + size
            return Slice(base + offset, offset, size)

    def reset(self):
        """Everything taken so far has been read: slices are handed out from the start again."""
        with self._lock:
            self._used = 0

    def release(self):
        with self._lock:
            self._buffer = None
            self._used = 0

    def source(self, piece):
        """The whole buffer a Slice lies in (piece.offset counts from its start)."""
        return piece.own_buffer if piece.own_buffer is not None else self._buffer

    def view(self, piece):
        """The bytes of a Slice as a tensor (on the pool's device)."""
        return self.source(piece)[piece.offset:piece.offset + piece.size]
