"""What torch inductor's Triton kernels fuse: the ATen operators and FX nodes of each kernel (read
from inductor's wrapper modules) and the model's source lines (seen while inductor wrote the
kernel in this process). Every use of torch inductor's internals lives here."""
