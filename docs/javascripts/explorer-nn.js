/* The attention explorer's building blocks: the steps of the package's forward passes.
 *
 * One function per step, each named after the PyTorch module or package function it repeats,
 * with the same shape comments. explorer-models.js puts them together into the site's models;
 * explorer.js draws the page. Everything is float64 (JavaScript's numbers), computed from the
 * models' exact float32 weights, which agrees with PyTorch's float32 to far better than the
 * 1e-4 the site's tests ask for.
 *
 * A vector is an array of numbers, a matrix (N, M) an array of N rows.
 */
window.attnprimerNN = (function () {
  "use strict";

  const LAYER_NORM_EPS = 1e-5; // torch.nn.LayerNorm's default

  /* ---- Reading the exported weights ----------------------------------------------------- */

  // {shape, float32: base64 of little-endian float32 bytes} -> nested arrays of that shape.
  function decodeArray(entry) {
    const binary = atob(entry.float32);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    const view = new DataView(bytes.buffer);
    const values = [];
    for (let offset = 0; offset < bytes.length; offset += 4) {
      values.push(view.getFloat32(offset, true)); // true: little-endian
    }
    const expected = entry.shape.reduce((a, b) => a * b, 1);
    if (values.length !== expected) {
      throw new Error(`shape [${entry.shape}] needs ${expected} values, got ${values.length}`);
    }
    return reshape(values, entry.shape);
  }

  function reshape(values, shape) {
    if (shape.length <= 1) return values;
    const [rows, ...rest] = shape;
    const size = values.length / rows;
    const out = [];
    for (let r = 0; r < rows; r++) out.push(reshape(values.slice(r * size, (r + 1) * size), rest));
    return out;
  }

  // The exported model with its weights decoded, keyed by their state_dict names.
  function loadModel(exported) {
    const weights = {};
    for (const [name, entry] of Object.entries(exported.weights)) {
      weights[name] = decodeArray(entry);
    }
    return { ...exported, weights };
  }

  /* ---- Vectors and matrices ------------------------------------------------------------- */

  function dot(a, b) {
    let sum = 0;
    for (let i = 0; i < a.length; i++) sum += a[i] * b[i];
    return sum;
  }

  function add(a, b) {
    return a.map((row, i) => row.map((value, j) => value + b[i][j])); // (N, D) + (N, D)
  }

  function relu(x) {
    return x.map((row) => row.map((value) => Math.max(0, value)));
  }

  const sigmoid = (x) => 1 / (1 + Math.exp(-x));

  // The index of the largest value; on a tie the first wins, as torch.argmax does here.
  function argmax(values) {
    let best = 0;
    for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
    return best;
  }

  // weights (N, S) x values (S, Dv) -> (N, Dv): each row's weighted average of the values.
  function weightedSum(weights, values) {
    return weights.map((row) =>
      values[0].map((_, d) => row.reduce((sum, weight, s) => sum + weight * values[s][d], 0)));
  }

  /* ---- Layers ----------------------------------------------------------------------------- */

  // nn.Linear: x (N, in) -> (N, out); weight (out, in) and bias (out,), as PyTorch stores them.
  // A layer without a bias (bias: false) adds nothing.
  function linear(x, weights, name) {
    const weight = weights[`${name}.weight`];
    const bias = weights[`${name}.bias`];
    return x.map((row) => weight.map((w, j) => dot(w, row) + (bias ? bias[j] : 0)));
  }

  // nn.Linear on one-hot codes: tokens (S,) -> (S, D). The one-hot code of token t picks
  // column t of the weight, so F.one_hot followed by the layer is a column lookup plus the bias.
  function oneHotLinear(tokens, weights, name) {
    const weight = weights[`${name}.weight`]; // (D, V + 1)
    const bias = weights[`${name}.bias`]; // (D,)
    return tokens.map((token) => weight.map((w, j) => w[token] + bias[j]));
  }

  // nn.Embedding: tokens (S,) -> their rows of the table (S, D).
  function embed(tokens, weights, name) {
    const table = weights[`${name}.weight`];
    return tokens.map((token) => table[token]);
  }

  // nn.LayerNorm over the last dimension: each row to mean 0 and (biased) variance 1, then
  // times the gain plus the bias. x (N, D) -> (N, D).
  function layerNorm(x, weights, name) {
    const gain = weights[`${name}.weight`];
    const bias = weights[`${name}.bias`];
    return x.map((row) => {
      const mean = row.reduce((a, b) => a + b, 0) / row.length;
      // Biased variance (divided by D, not D - 1), as torch's layer norm computes it.
      const variance = row.reduce((a, b) => a + (b - mean) ** 2, 0) / row.length;
      const scale = 1 / Math.sqrt(variance + LAYER_NORM_EPS);
      return row.map((value, i) => (value - mean) * scale * gain[i] + bias[i]);
    });
  }

  /* ---- Attention -------------------------------------------------------------------------- */

  // attnprimer.attention.masked_softmax for one row: allowed[s] false = that key is masked
  // and gets weight exactly 0; a row with no allowed key gets all zeros. Subtracting the
  // largest score first keeps exp from overflowing and does not change the result.
  function softmax(scores, allowed = null) {
    const ok = (s) => !allowed || allowed[s];
    const kept = scores.filter((_, s) => ok(s));
    if (!kept.length) return scores.map(() => 0);
    const largest = Math.max(...kept);
    const exps = scores.map((score, s) => (ok(s) ? Math.exp(score - largest) : 0));
    const total = exps.reduce((a, b) => a + b, 0);
    return exps.map((e) => e / total);
  }

  // Scaled dot-product attention (attnprimer.dot_product.scaled_dot_product_attention):
  // queries (L, Dk), keys (S, Dk), values (S, Dv) -> context (L, Dv), weights (L, S).
  // mask(l, s), if given, says whether query l may attend to key s.
  function sdpa(queries, keys, values, mask = null) {
    const scale = 1 / Math.sqrt(queries[0].length); // 1 / sqrt(Dk)
    const weights = queries.map((q, l) => softmax(
      keys.map((k) => dot(q, k) * scale),
      mask && keys.map((_, s) => mask(l, s)))); // (L, S)
    return { context: weightedSum(weights, values), weights };
  }

  const causal = (l, s) => s <= l; // attnprimer.masks.causal_mask: no peeking ahead

  // MultiHeadAttention.forward (attnprimer.multihead): project, split into H heads of
  // Dh = D / H columns (head-major), attend in each, merge, project.
  // query (L, D), key (S, D) -> output (L, D) and weights (H, L, S).
  // off: the heads (numbered from 0) switched off, as attnprimer.site.experiments.head_ablation.heads_off does
  // it: their columns of the merged context are zeroed before the output projection.
  function multiHeadAttention(query, key, weights, name, heads, mask = null, off = []) {
    const q = linear(query, weights, `${name}.query_proj`); // (L, D)
    const k = linear(key, weights, `${name}.key_proj`); // (S, D)
    const v = linear(key, weights, `${name}.value_proj`); // (S, D)
    const size = q[0].length / heads; // Dh
    const columns = (x, h) => x.map((row) => row.slice(h * size, (h + 1) * size));
    const merged = q.map((row) => row.map(() => 0)); // (L, D)
    const allWeights = [];
    for (let h = 0; h < heads; h++) {
      const { context, weights: headWeights } = sdpa(columns(q, h), columns(k, h),
                                                     columns(v, h), mask); // (L, Dh), (L, S)
      allWeights.push(headWeights);
      if (off.includes(h)) continue; // switched off: its columns stay 0
      context.forEach((row, l) => row.forEach((value, d) => { merged[l][h * size + d] = value; }));
    }
    return { output: linear(merged, weights, `${name}.out_proj`), weights: allWeights };
  }

  /* ---- Recurrence --------------------------------------------------------------------------- */

  // nn.GRUCell (and one step of nn.GRU): x (E,), h (H,) -> the next h (H,). The weights'
  // rows hold the reset gate r, the update gate z and the candidate n, in that order:
  //   r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)     z = the same with W_iz, W_hz
  //   n = tanh(W_in x + b_in + r * (W_hn h + b_hn))  h' = (1 - z) * n + z * h
  function gruCell(x, h, weightIH, weightHH, biasIH, biasHH) {
    const size = h.length;
    const fromInput = weightIH.map((w, j) => dot(w, x) + biasIH[j]); // (3H,)
    const fromState = weightHH.map((w, j) => dot(w, h) + biasHH[j]); // (3H,)
    return h.map((previous, j) => {
      const r = sigmoid(fromInput[j] + fromState[j]);
      const z = sigmoid(fromInput[size + j] + fromState[size + j]);
      const n = Math.tanh(fromInput[2 * size + j] + r * fromState[2 * size + j]);
      return (1 - z) * n + z * previous;
    });
  }

  /* ---- Positions ------------------------------------------------------------------------------ */

  // attnprimer.positional.sinusoidal_encoding: (S, D); dimensions (2i, 2i + 1) hold sin and
  // cos of position / base^(2i / D).
  function sinusoidalEncoding(length, dim, base) {
    const rows = [];
    for (let position = 0; position < length; position++) {
      const row = [];
      for (let i = 0; i < dim; i += 2) {
        const angle = position * base ** (-i / dim); // i = 2 x (pair index)
        row.push(Math.sin(angle), Math.cos(angle));
      }
      rows.push(row);
    }
    return rows;
  }

  // attnprimer.positional.apply_rotary: rotate each pair (x[2i], x[2i + 1]) of the row at
  // position p by the angle p * base^(-2i / D). x (S, D) -> (S, D).
  function applyRotary(x, base) {
    const dim = x[0].length;
    return x.map((row, position) => {
      const out = new Array(dim);
      for (let i = 0; i < dim; i += 2) {
        const angle = position * base ** (-i / dim);
        const [cos, sin] = [Math.cos(angle), Math.sin(angle)];
        const [even, odd] = [row[i], row[i + 1]];
        out[i] = even * cos - odd * sin;
        out[i + 1] = even * sin + odd * cos;
      }
      return out;
    });
  }

  return {
    add, applyRotary, argmax, causal, decodeArray, dot, embed, gruCell, layerNorm, linear,
    loadModel, multiHeadAttention, oneHotLinear, relu, sdpa, sigmoid, sinusoidalEncoding,
    softmax, weightedSum,
  };
})();
