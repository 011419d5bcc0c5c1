"""Recurrent encoder-decoders: vanilla, peeky, and with attention.

Taught in the chapters "RNN recap" (``docs/chapters/rnn-recap.md``) and "Bahdanau attention"
(``docs/chapters/bahdanau.md``).

An RNN reads a sequence one step at a time and keeps a hidden state, a
fixed-size summary of everything it has read so far. An *encoder-decoder*
(Sutskever et al., 2014; Cho et al., 2014) uses one RNN to read the input and a
second one to write the output, and the three decoders here differ only in what
they get from the encoder:

* **vanilla**: the encoder's last state starts the decoder, and that is all.
  Whatever the input was, it must fit in that one vector: the *bottleneck*;
* **peeky**: the same vector is also fed to every decoder step, so it cannot be
  forgotten on the way, but it is still one vector;
* **attention** (Bahdanau et al., 2015): at every step the decoder scores all
  the encoder's states against its own state and reads their weighted average,
  a *context vector* made for that step.

Training uses *teacher forcing*: each decoder step is fed the correct previous
token, not the model's own guess. At test time decoding is greedy: each step is
fed the previous step's most likely token.

Shape legend: B batch, S input length, T output steps, E embedding size,
H encoder state size (both directions together), D = H decoder state size.
Token 0 is padding everywhere.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnprimer.additive import AdditiveScore
from attnprimer.attention import attend
from attnprimer.dot_product import GeneralScore, dot_scores
from attnprimer.models import ModelOutput

__all__ = ["DECODERS", "SCORES", "Decoder", "Encoder", "Seq2Seq"]

PAD = 0
DECODERS = ("vanilla", "peeky", "attention")
"""The decoders, by name."""
SCORES = ("additive", "dot", "general")
"""The score functions of the attention decoder: Bahdanau's, and Luong's two."""


# --8<-- [start:encoder]
class Encoder(nn.Module):
    """Embed the tokens and run a GRU over them, forwards (and backwards if bidirectional).

    Padding at the end of a sequence is skipped (packed sequences), so the
    forward GRU's final state is the state after the last real token, the backward GRU
    starts from that token, and the outputs at padded steps are zero.

    Examples:
        >>> encoder = Encoder(num_tokens=6, embed_dim=8, hidden=16, bidirectional=True)
        >>> states, final = encoder(torch.tensor([[1, 2, 3], [4, 5, 0]]))
        >>> states.shape, final.shape                  # (B, S, H), (B, H): H = 2 x 16
        (torch.Size([2, 3, 32]), torch.Size([2, 32]))
    """

    def __init__(self, num_tokens: int, embed_dim: int, hidden: int, *,
                 bidirectional: bool = False) -> None:
        super().__init__()
        self.embed = nn.Embedding(num_tokens, embed_dim, padding_idx=PAD)
        self.gru = nn.GRU(embed_dim, hidden, batch_first=True,
                          bidirectional=bidirectional)
        self.output_dim = hidden * (2 if bidirectional else 1)

    def forward(
        self, tokens: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """tokens (B, S), padded with 0 at the end -> states (B, S, H) and final state (B, H)."""
        lengths = (tokens != PAD).sum(dim=1).clamp(min=1)  # (B,)
        # Packed: the GRU skips padding; the last state is the last token's.
        packed = pack_padded_sequence(self.embed(tokens), lengths.cpu(),
                                      batch_first=True, enforce_sorted=False)
        states, last = self.gru(packed)  # last: (directions, B, hidden)
        states, _ = pad_packed_sequence(  # back to (B, S, H), zeros at padding
            states, batch_first=True, total_length=tokens.shape[1])
        # The last states of the forward (and the backward) GRU, side by side:
        final = torch.cat(list(last), dim=-1)  # (B, H)
        return states, final
# --8<-- [end:encoder]


# --8<-- [start:decoder]
class Decoder(nn.Module):
    """One GRU step at a time; what it reads from the encoder depends on ``kind``.

    Every step is fed the previous output token and what it *reads* from the encoder:
    nothing (vanilla), the encoder's final state (peeky), or a context vector made for
    this step by attention over all the encoder's states.

    Args:
        num_outputs: C, the output tokens (the decoder also embeds a start token, number C).
        embed_dim: E.
        memory_dim: H, the size of the encoder's states; the decoder state has the same size.
        kind: ``"vanilla"``, ``"peeky"`` or ``"attention"``.
        score: for attention, ``"additive"`` (Bahdanau), ``"dot"`` or ``"general"`` (Luong).
    """

    def __init__(self, num_outputs: int, embed_dim: int, memory_dim: int,
                 kind: str = "attention", score: str = "additive") -> None:
        super().__init__()
        if kind not in DECODERS:
            raise ValueError(f"kind must be one of {', '.join(DECODERS)}, got {kind!r}")
        if score not in SCORES:
            raise ValueError(f"score must be one of {', '.join(SCORES)}, got {score!r}")
        self.kind, self.score_name, self.start = kind, score, num_outputs
        # One embedding more than the outputs: the start token.
        self.embed = nn.Embedding(num_outputs + 1, embed_dim)
        # The encoder's final state, mapped to the decoder's first state:
        self.bridge = nn.Linear(memory_dim, memory_dim)
        # What each step reads: nothing (vanilla) or a vector of size H.
        reads = 0 if kind == "vanilla" else memory_dim
        self.cell = nn.GRUCell(embed_dim + reads, memory_dim)
        self.out = nn.Linear(memory_dim + reads, num_outputs)
        # The weights of the score function (the dot score s . h has none):
        self.score = None
        if kind == "attention" and score == "additive":
            # W_q, W_k and v, with A = H:
            self.score = AdditiveScore(memory_dim, memory_dim, memory_dim)
        elif kind == "attention" and score == "general":
            self.score = GeneralScore(memory_dim, memory_dim)  # W

    def initial_state(self, final: torch.Tensor) -> torch.Tensor:
        """The first decoder state (B, D) from the encoder's final state (B, H)."""
        return torch.tanh(self.bridge(final))

    def keys(self, memory: torch.Tensor) -> torch.Tensor:
        """What the scores compare the decoder state with, computed once per input.

        For the additive score that is ``W_k h`` for every encoder state h
        (B, S, A): it does not change from one output step to the next.
        """
        # What every step's scores compare its state with, once per input:
        # W_k h does not change from one output step to the next.
        if self.kind == "attention" and self.score_name == "additive":
            return self.score.key_proj(memory)  # W_k h: (B, S, A)
        return memory  # (B, S, H)

    def step(
        self,
        token: torch.Tensor,
        state: torch.Tensor,
        memory: torch.Tensor,
        final: torch.Tensor,
        mask: torch.Tensor,
        keys: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """One output step.

        Args:
            token: (B,) the previous output token (the start token at first).
            state: (B, D) the previous decoder state.
            memory: (B, S, H) the encoder's states.
            final: (B, H) the encoder's final state.
            mask: (B, 1, S) True at real (not padded) input positions.
            keys: ``self.keys(memory)``, if already computed.

        Returns:
            logits (B, C), the new state (B, D), and the attention weights (B, S) or None.
        """
        # What this step reads from the encoder:
        weights = None
        if self.kind == "vanilla":
            read = memory.new_zeros(state.shape[0], 0)  # nothing: (B, 0)
        elif self.kind == "peeky":
            read = final  # the same summary at every step: (B, H)
        else:
            if keys is None:
                keys = self.keys(memory)
            # The previous state asks, every encoder state answers: (B, 1, S)
            scores = self.align(state[:, None, :], keys)
            # Softmax, then the weighted average: (B, 1, H), (B, 1, S)
            context, weights = attend(scores, memory, mask)
            read, weights = context[:, 0], weights[:, 0]  # (B, H), (B, S)
        inputs = torch.cat([self.embed(token), read], dim=-1)  # (B, E + H)
        state = self.cell(inputs, state)  # (B, D)
        logits = self.out(torch.cat([state, read], dim=-1))  # (B, C)
        return logits, state, weights

    def align(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Bahdanau's alignment scores: query (B, 1, D), ``self.keys(memory)`` -> (B, 1, S)."""
        if self.score_name == "additive":  # v^T tanh(W_q s + W_k h)
            projected = self.score.query_proj(query)  # W_q s: (B, 1, A)
            # Broadcast: (B, 1, A) + (B, S, A) -> (B, S, A)
            hidden = torch.tanh(projected + keys)
            return (hidden @ self.score.v)[:, None, :]  # (B, S) -> (B, 1, S)
        if self.score_name == "general":
            return self.score(query, keys)  # s^T W h
        return dot_scores(query, keys)  # s . h: the sizes agree (D = H)
# --8<-- [end:decoder]


# --8<-- [start:seq2seq]
class Seq2Seq(nn.Module):
    """An encoder and a decoder: teacher-forced with ``targets``, greedy without.

    Args:
        num_tokens: input tokens, padding (0) included.
        num_outputs: C, output tokens, padding (0) included.
        embed_dim: E.
        hidden: encoder GRU size per direction.
        kind: the decoder, ``"vanilla"``, ``"peeky"`` or ``"attention"``.
        score: the attention decoder's score function.
        bidirectional: read the input in both directions.

    Examples:
        >>> model = Seq2Seq(num_tokens=6, num_outputs=7, embed_dim=8, hidden=16)
        >>> inputs = torch.tensor([[1, 2, 3], [4, 5, 0]])
        >>> output = model(inputs)                          # greedy: S + 1 steps
        >>> output.logits.shape, output.attention["encoder-decoder"].shape
        (torch.Size([2, 4, 7]), torch.Size([2, 4, 3]))
        >>> bool((output.attention["encoder-decoder"][1, :, 2] == 0).all())   # padding: no weight
        True
    """

    def __init__(self, num_tokens: int, num_outputs: int, embed_dim: int,
                 hidden: int, *, kind: str = "attention",
                 score: str = "additive", bidirectional: bool = False) -> None:
        super().__init__()
        self.encoder = Encoder(num_tokens, embed_dim, hidden,
                               bidirectional=bidirectional)
        self.decoder = Decoder(num_outputs, embed_dim,
                               self.encoder.output_dim, kind, score)

    def forward(
        self, inputs: torch.Tensor, targets: torch.Tensor | None = None
    ) -> ModelOutput:
        """inputs (B, S) -> logits (B, T, C) and, with attention, weights (B, T, S).

        With ``targets`` (B, T) the decoder is teacher-forced: step t is fed
        ``targets[:, t - 1]``. Without, it decodes greedily for T = S + 1 steps.
        """
        memory, final = self.encoder(inputs)  # (B, S, H), (B, H)
        mask = (inputs != PAD)[:, None, :]  # (B, 1, S)
        state = self.decoder.initial_state(final)  # (B, D)
        # The first step is fed the start token: (B,)
        token = inputs.new_full((inputs.shape[0],), self.decoder.start)
        steps = inputs.shape[1] + 1 if targets is None else targets.shape[1]
        keys = self.decoder.keys(memory)  # once for every step
        all_logits, all_weights = [], []
        for step in range(steps):
            logits, state, weights = self.decoder.step(token, state, memory,
                                                       final, mask, keys)
            all_logits.append(logits)
            all_weights.append(weights)
            # Greedy: the step's best guess. Teacher forcing: the right token.
            token = (logits.argmax(dim=-1) if targets is None
                     else targets[:, step])
        attention = {}
        if all_weights[0] is not None:  # the attention decoder: (B, T, S)
            attention["encoder-decoder"] = torch.stack(all_weights, dim=1)
        # The logits of every step, stacked: (B, T, C)
        return ModelOutput(torch.stack(all_logits, dim=1), attention)
# --8<-- [end:seq2seq]
