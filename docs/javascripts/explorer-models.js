/* The attention explorer's models: the forward passes of the site's trained models, and the
 * interventions the chapters make on them, built from the steps in explorer-nn.js.
 *
 * Read each function beside the Python it repeats (named in its comment). Shape legend, as in
 * the package: S input length, T output steps, D hidden size, H heads, C classes, V letters
 * (one-hot codes have V + 1 entries: the blank, then the letters).
 */
window.attnprimerModels = (function () {
  "use strict";

  const nn = window.attnprimerNN;
  const { add, argmax, layerNorm, linear, sdpa } = nn;

  // Logits (T, C) -> the predicted class of each output step and its softmax probability.
  function classify(logits) {
    return logits.map((row) => {
      const prediction = argmax(row);
      return { prediction, probability: nn.softmax(row)[prediction] };
    });
  }

  /* ---- Counting and difference (attnprimer.models.counting, .difference) ------------------ */

  // CountingModel.read: tokens (S,) -> hidden (T, D) and the weights (T, S) each query used.
  function countingRead(w, tokens) {
    const keys = nn.oneHotLinear(tokens, w, "key_value"); // (S, V + 1) -> (S, D); values = keys
    const queries = w.queries; // (T, D), one learned query per output step
    const { context, weights } = sdpa(queries, keys, keys); // (T, D), (T, S)
    return { hidden: layerNorm(add(context, queries), w, "norm"), weights }; // residual, norm
  }

  // CountingModel.forward: tokens (S,) -> logits (T, C), weights {"encoder-decoder": (T, S)}.
  function countingForward(model, tokens) {
    const { hidden, weights } = countingRead(model.weights, tokens);
    const logits = linear(hidden, model.weights, "classifier"); // (T, D) -> (T, C)
    return { logits, outputs: classify(logits), attention: { "encoder-decoder": weights } };
  }

  // DifferenceModel.forward, and attnprimer.site.explorer.interventions.difference_intervened:
  // blocked: output steps the last (difference) step may not read; swap: exchange its weights
  // on the A and the B step (steps 0 and 1) before it averages.
  // tokens (S,) -> logits (T, C), weights {"encoder-decoder": (T, S), "self": (T, T)}.
  function differenceForward(model, tokens, { blocked = [], swap = false } = {}) {
    const w = model.weights;
    let { hidden, weights } = countingRead(w, tokens); // (T, D), (T, S)
    const attention = { "encoder-decoder": weights };
    if (model.self_attention) { // OutputSelfAttention
      const last = hidden.length - 1;
      const [query, key, value] = model.projections
        ? ["query", "key", "value"].map((name) => linear(hidden, w, `self_attention.${name}`))
        : [hidden, hidden, hidden]; // no W_q, W_k, W_v: the hidden states themselves
      const mask = (t, s) => !(t === last && blocked.includes(s));
      const selfWeights = sdpa(query, key, value, mask).weights; // (T, T)
      if (swap) {
        const row = selfWeights[last];
        [row[0], row[1]] = [row[1], row[0]];
      }
      const context = nn.weightedSum(selfWeights, value); // (T, D)
      hidden = layerNorm(add(hidden, context), w, "self_attention.norm"); // residual, norm
      attention.self = selfWeights;
    }
    const logits = linear(hidden, w, "classifier");
    return { logits, outputs: classify(logits), attention };
  }

  /* ---- Signal (attnprimer.models.signal) -------------------------------------------------- */

  // EncoderLayer: self-attention, residual, layer norm; feed-forward, residual, layer norm.
  // x (S, D) -> (S, D) and the self-attention weights (S, S).
  function encoderLayer(x, weights, rotary, base) {
    let query = x;
    let key = x;
    if (rotary) {
      query = nn.applyRotary(linear(x, weights, "encoder.query"), base); // rotated by position
      key = nn.applyRotary(linear(x, weights, "encoder.key"), base);
    }
    const { context, weights: selfWeights } = sdpa(query, key, x); // (S, D), (S, S)
    x = layerNorm(add(x, context), weights, "encoder.norm_attention");
    const hidden = nn.relu(linear(x, weights, "encoder.feed_forward.0")); // (S, D) -> (S, 2D)
    const fed = linear(hidden, weights, "encoder.feed_forward.2"); // (S, 2D) -> (S, D)
    x = layerNorm(add(x, fed), weights, "encoder.norm_feed_forward");
    return { encoded: x, selfWeights };
  }

  // SignalModel.forward: tokens (S,) -> logits (1, C) and weights
  // {"encoder self": (S, S), "encoder-decoder": (1, S)}.
  function signalForward(model, tokens) {
    const w = model.weights;
    let x = nn.oneHotLinear(tokens, w, "embed"); // (S, D)
    if (model.pos_enc === "learned") {
      x = add(x, w["position.table"]); // + the learned vector of each position: (S, D)
    } else if (model.pos_enc === "sinusoidal") {
      x = add(x, nn.sinusoidalEncoding(tokens.length, model.hidden, model.position_base));
    }
    const { encoded, selfWeights } = encoderLayer(x, w, model.pos_enc === "rotary",
                                                  model.position_base); // (S, D), (S, S)
    const query = w.query; // (1, D), the one output step
    const { context, weights } = sdpa(query, encoded, encoded); // (1, D), (1, S)
    const logits = linear(layerNorm(add(context, query), w, "norm"), w, "classifier"); // (1, C)
    return {
      logits,
      outputs: classify(logits),
      attention: { "encoder self": selfWeights, "encoder-decoder": weights },
    };
  }

  /* ---- Reversal with GRUs (attnprimer.rnn) ------------------------------------------------ */

  // Encoder: embed, then a GRU over the tokens. tokens (S,) -> states (S, H), final (H,).
  function rnnEncode(w, tokens) {
    let state = new Array(w["encoder.gru.weight_hh_l0"][0].length).fill(0); // h_0 = 0: (H,)
    const states = nn.embed(tokens, w, "encoder.embed").map((x) => {
      state = nn.gruCell(x, state, w["encoder.gru.weight_ih_l0"], w["encoder.gru.weight_hh_l0"],
                         w["encoder.gru.bias_ih_l0"], w["encoder.gru.bias_hh_l0"]);
      return state;
    });
    return { states, final: state };
  }

  // Seq2Seq.forward, greedy, and attnprimer.site.explorer.interventions.reversal_forced: force maps an
  // output step to the input position it must read (weight 1 there, 0 elsewhere).
  // tokens (S,) -> logits (T, C) for T = S + 1 steps and, with attention, weights (T, S).
  function reversalForward(model, tokens, { force = {} } = {}) {
    const w = model.weights;
    const { states: memory, final } = rnnEncode(w, tokens); // (S, H), (H,)
    let state = linear([final], w, "decoder.bridge")[0].map(Math.tanh); // initial_state: (D,)
    // Decoder.keys: W_k h for every encoder state, once per input (S, A)
    const attention = model.decoder === "attention";
    const keys = attention ? linear(memory, w, "decoder.score.key_proj") : null;
    let token = model.start; // the first step is fed the start token
    const logits = [];
    const weights = [];
    for (let step = 0; step <= tokens.length; step++) {
      let read = []; // vanilla: nothing
      if (model.decoder === "peeky") read = final; // the same summary at every step
      if (attention) {
        let row; // (S,)
        if (step in force) {
          row = memory.map((_, s) => (s === force[step] ? 1 : 0)); // the intervention
        } else { // Decoder.align, additive: v . tanh(W_q s + W_k h)
          const projected = linear([state], w, "decoder.score.query_proj")[0]; // (A,)
          const hidden = keys.map((key) => key.map((k, a) => Math.tanh(k + projected[a])));
          row = nn.softmax(hidden.map((h) => nn.dot(h, w["decoder.score.v"]))); // (S,)
        }
        read = nn.weightedSum([row], memory)[0]; // the context vector: (H,)
        weights.push(row);
      }
      const input = [...w["decoder.embed.weight"][token], ...read]; // (E + H,)
      state = nn.gruCell(input, state, w["decoder.cell.weight_ih"], w["decoder.cell.weight_hh"],
                         w["decoder.cell.bias_ih"], w["decoder.cell.bias_hh"]); // (D,)
      const stepLogits = linear([[...state, ...read]], w, "decoder.out")[0]; // (C,)
      logits.push(stepLogits);
      token = argmax(stepLogits); // greedy: fed its own best guess
    }
    return { logits, outputs: classify(logits),
             attention: attention ? { "encoder-decoder": weights } : {} };
  }

  /* ---- The Transformer (attnprimer.transformer) ------------------------------------------- */

  // FeedForward: (L, D) -> (L, F) -> (L, D), the same at every position.
  function feedForwardOf(x, w, name) {
    const expanded = nn.relu(linear(x, w, `${name}.feed_forward.expand`)); // (L, F)
    return linear(expanded, w, `${name}.feed_forward.contract`); // (L, D)
  }

  // EncoderBlock (mask = null) and, under a causal mask, DecoderOnly's blocks.
  // x (L, D) -> (L, D) and weights (H, L, L). off: heads (from 0) switched off.
  function encoderBlock(x, w, name, model, mask, off) {
    const attend = (input) => nn.multiHeadAttention(input, input, w, `${name}.attention`,
                                                    model.heads, mask, off);
    const feedForward = (input) => feedForwardOf(input, w, name);
    let result;
    if (model.pre_norm) { // x + f(norm(x))
      result = attend(layerNorm(x, w, `${name}.norm_attention`));
      x = add(x, result.output);
      x = add(x, feedForward(layerNorm(x, w, `${name}.norm_feed_forward`)));
    } else { // norm(x + f(x))
      result = attend(x);
      x = layerNorm(add(x, result.output), w, `${name}.norm_attention`);
      x = layerNorm(add(x, feedForward(x)), w, `${name}.norm_feed_forward`);
    }
    return { x, weights: result.weights };
  }

  // DecoderBlock: causal self-attention, cross-attention to memory (S, D), feed-forward.
  // y (T, D) -> (T, D), self weights (H, T, T), cross weights (H, T, S).
  function decoderBlock(y, memory, w, name, model, off) {
    const heads = model.heads;
    const feedForward = (input) => feedForwardOf(input, w, name);
    let self;
    let cross;
    if (model.pre_norm) {
      const normed = layerNorm(y, w, `${name}.norm_self`);
      self = nn.multiHeadAttention(normed, normed, w, `${name}.self_attention`, heads,
                                   nn.causal, off.self);
      y = add(y, self.output);
      cross = nn.multiHeadAttention(layerNorm(y, w, `${name}.norm_cross`), memory, w,
                                    `${name}.cross_attention`, heads, null, off.cross);
      y = add(y, cross.output);
      y = add(y, feedForward(layerNorm(y, w, `${name}.norm_feed_forward`)));
    } else {
      self = nn.multiHeadAttention(y, y, w, `${name}.self_attention`, heads, nn.causal, off.self);
      y = layerNorm(add(y, self.output), w, `${name}.norm_self`);
      cross = nn.multiHeadAttention(y, memory, w, `${name}.cross_attention`, heads, null,
                                    off.cross);
      y = layerNorm(add(y, cross.output), w, `${name}.norm_cross`);
      y = layerNorm(add(y, feedForward(y)), w, `${name}.norm_feed_forward`);
    }
    return { y, self: self.weights, cross: cross.weights };
  }

  // by_head: weights (H, L, S) -> {"name.1": (L, S), ...}
  function byHead(name, weights, into) {
    weights.forEach((head, h) => { into[`${name}.${h + 1}`] = head; });
  }

  // Transformer.forward, greedy, with heads_off(model, off): off is a list of head names
  // ("cross 1.2"). tokens (S,) -> logits (T, C) for T = S + 1 and every head's weights.
  function transformerForward(model, tokens, { off = [] } = {}) {
    const w = model.weights;
    const headsOff = (kind, layer) => off.filter((name) => name.startsWith(`${kind} ${layer}.`))
      .map((name) => Number(name.split(".").pop()) - 1);
    const table = nn.sinusoidalEncoding(tokens.length + 2, model.dim, model.position_base);
    const positioned = (rows) => add(rows, table.slice(0, rows.length)); // SinusoidalEncoding
    const attention = {};
    let x = positioned(nn.embed(tokens, w, "source_embed")); // (S, D)
    for (let layer = 1; layer <= model.layers; layer++) {
      const block = encoderBlock(x, w, `encoder.${layer - 1}`, model, null,
                                 headsOff("encoder self", layer));
      x = block.x;
      byHead(`encoder self ${layer}`, block.weights, attention);
    }
    const memory = model.pre_norm ? layerNorm(x, w, "encoder_norm") : x; // (S, D)
    const written = [model.start]; // the start token, then the outputs so far
    let logits;
    let decoded;
    for (let step = 0; step <= tokens.length; step++) { // greedy, S + 1 steps
      decoded = {};
      let y = positioned(nn.embed(written, w, "target_embed")); // (t + 1, D)
      for (let layer = 1; layer <= model.layers; layer++) {
        const block = decoderBlock(y, memory, w, `decoder.${layer - 1}`, model, {
          self: headsOff("decoder self", layer), cross: headsOff("cross", layer) });
        y = block.y;
        byHead(`decoder self ${layer}`, block.self, decoded);
        byHead(`cross ${layer}`, block.cross, decoded);
      }
      const normed = model.pre_norm ? layerNorm(y, w, "decoder_norm") : y;
      logits = linear(normed, w, "out"); // (t + 1, C)
      written.push(argmax(logits[logits.length - 1]));
    }
    return { logits, outputs: classify(logits), attention: { ...attention, ...decoded },
             fed: written.slice(0, -1) };
  }

  // Every head's name, in the order of the layers: "encoder self 1.1", ... (head_names).
  function headNames(model) {
    const names = [];
    for (const kind of ["encoder self", "decoder self", "cross"]) {
      for (let layer = 1; layer <= model.layers; layer++) {
        for (let head = 1; head <= model.heads; head++) names.push(`${kind} ${layer}.${head}`);
      }
    }
    return names;
  }

  return { countingForward, differenceForward, encoderBlock, headNames, reversalForward,
           signalForward, transformerForward };
})();
