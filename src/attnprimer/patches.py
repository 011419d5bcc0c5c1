"""Images as sequences of patches, and a patch embedding with a 2-D position.

Taught in the chapter "Attention over images" (``docs/chapters/attention-over-images.md``).

Attention reads a sequence. To read an image, cut it into square patches, P x P pixels each,
and read them in row-major order: left to right along the top row of patches, then the next
row down. That is what Dosovitskiy et al. (2021, "An image is worth 16x16 words") did for the
Vision Transformer; a linear map of each patch's P * P pixels is its token embedding. A patch
does not know where it came from, so each gets a learned embedding of its row and one of its
column, added to its own: a 2-D position.

Shape legend: B batch, Hi x Wi image height and width in pixels, P patch size,
R x Q rows and columns of patches (R = Hi / P, Q = Wi / P), N = R * Q patches, D model dim.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["PatchEmbedding", "patch_grid", "patchify", "unpatchify"]


def _check_image(images: torch.Tensor, patch: int) -> None:
    if images.dim() != 3:
        raise ValueError(f"expected images (B, Hi, Wi), got shape {tuple(images.shape)}")
    height, width = images.shape[-2:]
    if patch <= 0 or height % patch or width % patch:
        raise ValueError(f"patch size {patch} must divide the image's height {height} "
                         f"and width {width}")


# --8<-- [start:patchify]
def patchify(images: torch.Tensor, patch: int) -> torch.Tensor:
    """Cut images into P x P patches, in row-major order, each flattened row by row.

    Args:
        images: (B, Hi, Wi).
        patch: P, which divides Hi and Wi.

    Returns:
        (B, N, P * P): patch ``r * Q + q`` holds rows ``r*P .. r*P+P-1`` and columns
        ``q*P .. q*P+P-1`` of the image.

    Examples:
        >>> image = torch.arange(16.).reshape(1, 4, 4)
        >>> patchify(image, 2)[0, 1]        # top row, second patch: columns 2 and 3
        tensor([2., 3., 6., 7.])
    """
    _check_image(images, patch)
    B, height, width = images.shape
    rows, cols = height // patch, width // patch
    # Split each axis in two: which patch, and where inside it
    grid = images.reshape(B, rows, patch, cols, patch)  # (B, R, P, Q, P)
    # Bring the two "which patch" axes together, then the two "inside" axes
    grid = grid.permute(0, 1, 3, 2, 4)  # (B, R, Q, P, P)
    return grid.reshape(B, rows * cols, patch * patch)  # (B, N, P*P)
# --8<-- [end:patchify]


def unpatchify(patches: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """The inverse of [`patchify`][attnprimer.patches.patchify]: patches back into images.

    Args:
        patches: (B, N, P * P), in row-major order.
        height: Hi, in pixels.
        width: Wi, in pixels.

    Returns:
        (B, Hi, Wi).

    Examples:
        >>> images = torch.randn(2, 8, 12)
        >>> torch.equal(unpatchify(patchify(images, 4), 8, 12), images)
        True
    """
    B, count, size = patches.shape
    patch = round(size ** 0.5)
    if patch * patch != size or count * size != height * width:
        raise ValueError(f"patches {tuple(patches.shape)} do not tile a {height} x {width} image")
    rows, cols = height // patch, width // patch
    grid = patches.reshape(B, rows, cols, patch, patch)  # (B, R, Q, P, P)
    grid = grid.permute(0, 1, 3, 2, 4)  # (B, R, P, Q, P)
    return grid.reshape(B, height, width)


def patch_grid(rows: int, cols: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The row and the column of each patch, in row-major order: two (N,) tensors.

    Examples:
        >>> patch_grid(2, 3)
        (tensor([0, 0, 0, 1, 1, 1]), tensor([0, 1, 2, 0, 1, 2]))
    """
    index = torch.arange(rows * cols)
    return index // cols, index % cols


# --8<-- [start:patch_embedding]
class PatchEmbedding(nn.Module):
    """A linear map of each patch's pixels, plus a learned embedding of its row and its column.

    Args:
        patch: P.
        rows: R, rows of patches.
        cols: Q, columns of patches.
        dim: D.
        position: add the 2-D position (``False``: the patches are a set, not a grid).

    Examples:
        >>> embed = PatchEmbedding(patch=4, rows=4, cols=8, dim=16)
        >>> embed(torch.randn(3, 16, 32)).shape   # (B, N, D), N = 4 * 8
        torch.Size([3, 32, 16])
    """

    def __init__(self, patch: int, rows: int, cols: int, dim: int, *,
                 position: bool = True) -> None:
        super().__init__()
        self.patch, self.rows, self.cols = patch, rows, cols
        self.pixels = nn.Linear(patch * patch, dim)  # P*P -> D
        self.position = position
        if position:  # one vector per row of patches, one per column
            self.row = nn.Parameter(torch.randn(rows, dim) * 0.1)  # (R, D)
            self.col = nn.Parameter(torch.randn(cols, dim) * 0.1)  # (Q, D)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """images (B, Hi, Wi) -> patch embeddings (B, N, D)."""
        x = self.pixels(patchify(images, self.patch))  # (B, N, D)
        if self.position:
            row, col = patch_grid(self.rows, self.cols)  # (N,), (N,)
            x = x + self.row[row] + self.col[col]  # + (N, D)
        return x
# --8<-- [end:patch_embedding]
