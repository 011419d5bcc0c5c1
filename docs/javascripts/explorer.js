/* The attention explorer: the site's trained models, run in your browser.
 *
 * The docs build exports the trained weights (src/attnprimer/explorer.py writes
 * assets/explorer/models.json); this script runs the forward passes of CountingModel and
 * SignalModel from src/attnprimer/models.py on whatever the reader types, and draws what
 * they predict and where they attend. Read it side by side with models.py: one function per
 * step, in the same order, with the same shape comments.
 *
 * Shape legend, as in the package: S input length, T output steps (queries), D hidden size,
 * C classes, V letters (one-hot codes have V + 1 entries: the blank, then the letters).
 * A vector is an array of numbers, a matrix (N, M) an array of N rows. The weights are the
 * models' float32 values; everything computed from them is float64 (JavaScript's numbers),
 * which agrees with PyTorch's float32 to far better than the 1e-4 the site tests ask for.
 *
 * The script does nothing on a page without the explorer's elements.
 */
(function () {
  "use strict";

  const FORMAT = 1; // attnprimer.explorer.EXPLORER_FORMAT
  const LAYER_NORM_EPS = 1e-5; // torch.nn.LayerNorm's default
  const DATA_URL = new URL("../assets/explorer/models.json", document.currentScript.src);

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

  /* ---- The steps of a forward pass ------------------------------------------------------ */

  function dot(a, b) {
    let sum = 0;
    for (let i = 0; i < a.length; i++) sum += a[i] * b[i];
    return sum;
  }

  // nn.Linear: x (N, in) -> (N, out); weight (out, in) and bias (out,), as PyTorch stores them.
  function linear(x, weights, name) {
    const weight = weights[`${name}.weight`];
    const bias = weights[`${name}.bias`];
    return x.map((row) => weight.map((w, j) => dot(w, row) + bias[j]));
  }

  // nn.Linear on one-hot codes: tokens (S,) -> (S, D). The one-hot code of token t picks
  // column t of the weight, so F.one_hot followed by the layer is a column lookup plus the bias.
  function oneHotLinear(tokens, weights, name) {
    const weight = weights[`${name}.weight`]; // (D, V + 1)
    const bias = weights[`${name}.bias`]; // (D,)
    return tokens.map((token) => weight.map((w, j) => w[token] + bias[j]));
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

  function add(a, b) {
    return a.map((row, i) => row.map((value, j) => value + b[i][j])); // (N, D) + (N, D)
  }

  function relu(x) {
    return x.map((row) => row.map((value) => Math.max(0, value)));
  }

  // Softmax of one row of scores; subtracting the largest first keeps exp from overflowing
  // and does not change the result.
  function softmax(scores) {
    const largest = Math.max(...scores);
    const exps = scores.map((score) => Math.exp(score - largest));
    const total = exps.reduce((a, b) => a + b, 0);
    return exps.map((e) => e / total);
  }

  // Scaled dot-product attention (attnprimer.dot_product.scaled_dot_product_attention):
  // queries (L, Dk), keys (S, Dk), values (S, Dv) -> context (L, Dv), weights (L, S).
  function sdpa(queries, keys, values) {
    const scale = 1 / Math.sqrt(queries[0].length); // 1 / sqrt(Dk)
    const weights = queries.map((q) => softmax(keys.map((k) => dot(q, k) * scale))); // (L, S)
    const context = weights.map((row) =>
      values[0].map((_, d) => row.reduce((sum, weight, s) => sum + weight * values[s][d], 0)),
    ); // (L, S) x (S, Dv) -> (L, Dv)
    return { context, weights };
  }

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

  // EncoderLayer: self-attention, residual, layer norm; feed-forward, residual, layer norm.
  // x (S, D) -> (S, D) and the self-attention weights (S, S).
  function encoderLayer(x, weights, rotary, base) {
    let query = x;
    let key = x;
    if (rotary) {
      query = applyRotary(linear(x, weights, "encoder.query"), base); // (S, D), rotated by position
      key = applyRotary(linear(x, weights, "encoder.key"), base);
    }
    const { context, weights: selfWeights } = sdpa(query, key, x); // (S, D), (S, S)
    x = layerNorm(add(x, context), weights, "encoder.norm_attention");
    const hidden = relu(linear(x, weights, "encoder.feed_forward.0")); // (S, D) -> (S, 2D)
    const fed = linear(hidden, weights, "encoder.feed_forward.2"); // (S, 2D) -> (S, D)
    x = layerNorm(add(x, fed), weights, "encoder.norm_feed_forward");
    return { encoded: x, selfWeights };
  }

  // Logits (T, C) -> the predicted class of each output step and its softmax probability.
  function classify(logits) {
    return logits.map((row) => {
      const probabilities = softmax(row);
      let best = 0;
      for (let c = 1; c < row.length; c++) {
        if (row[c] > row[best]) best = c; // argmax; on a tie the first class wins
      }
      return { prediction: best, probability: probabilities[best] };
    });
  }

  // CountingModel.forward: tokens (S,) -> logits (T, C) and weights {"encoder-decoder": (T, S)}.
  function countingForward(model, tokens) {
    const w = model.weights;
    const keys = oneHotLinear(tokens, w, "key_value"); // (S, V + 1) -> (S, D); values = keys
    const queries = w.queries; // (T, D), one learned query per output step
    const { context, weights } = sdpa(queries, keys, keys); // (T, D), (T, S)
    const hidden = layerNorm(add(context, queries), w, "norm"); // residual, then layer norm
    const logits = linear(hidden, w, "classifier"); // (T, D) -> (T, C)
    return { logits, outputs: classify(logits), attention: { "encoder-decoder": weights } };
  }

  // SignalModel.forward: tokens (S,) -> logits (1, C) and weights
  // {"encoder self": (S, S), "encoder-decoder": (1, S)}.
  function signalForward(model, tokens) {
    const w = model.weights;
    let x = oneHotLinear(tokens, w, "embed"); // (S, D)
    if (model.pos_enc === "learned") {
      x = add(x, w["position.table"]); // + the learned vector of each position: (S, D)
    } else if (model.pos_enc === "sinusoidal") {
      x = add(x, sinusoidalEncoding(tokens.length, model.hidden, model.position_base));
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

  /* ---- From text to tokens, as the tasks' encode() does --------------------------------- */

  // CountingTask.encode: letters and spaces, at most S of them, padded with blanks to S.
  // Returns {tokens} or {error}: a message for the reader, never an exception.
  function encodeCounting(model, text) {
    const letters = model.alphabet.slice(1);
    const unknown = unknownCharacters(text, model.alphabet);
    if (unknown) {
      return { error: `Only the letters ${spell(letters)} and spaces, please: ${unknown}.` };
    }
    if (text.length > model.input_length) {
      return { error: `That is ${text.length} characters; ` +
                      `the model reads at most ${model.input_length}.` };
    }
    const padded = text.padEnd(model.input_length, model.blank);
    return { tokens: [...padded].map((char) => model.alphabet.indexOf(char)) };
  }

  // SignalTask.encode: exactly S letters, no blanks; the first is the signal.
  function encodeSignal(model, text) {
    const unknown = unknownCharacters(text, model.letters);
    if (unknown) {
      return { error: `Only the letters ${spell(model.letters)}, no spaces: ${unknown}.` };
    }
    if (text.length !== model.input_length) {
      return { error: `That is ${text.length} letter${text.length === 1 ? "" : "s"}; ` +
                      `the model reads exactly ${model.input_length}.` };
    }
    return { tokens: [...text].map((char) => model.alphabet.indexOf(char)) };
  }

  function unknownCharacters(text, allowed) {
    const unknown = [...new Set([...text].filter((char) => !allowed.includes(char)))];
    if (!unknown.length) return "";
    const shown = unknown.map((char) => (char === " " ? "a space" : `“${char}”`));
    const lower = unknown.some((char) => allowed.includes(char.toUpperCase()));
    return `this has ${shown.join(", ")}` + (lower ? " (letters are upper case)" : "");
  }

  function spell(letters) {
    const list = [...letters];
    return list.length > 1 ? `${list.slice(0, -1).join(", ")} and ${list.at(-1)}` : list.join("");
  }

  /* ---- Drawing --------------------------------------------------------------------------- */

  function element(tag, attributes = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
      if (name === "text") node.textContent = value;
      else node.setAttribute(name, value);
    }
    node.append(...children);
    return node;
  }

  const show = (char) => (char === " " ? "␣" : char); // a blank, visibly

  // A heatmap of weights (rows, columns) as a table: one row per query, one column per input
  // position. Each cell holds its weight to two decimals; data-weight has it at full precision.
  // data-attention names the weights as the model's output does ("encoder-decoder", ...).
  // The colour scale is fixed, 0 to 1, as in the chapters' heatmaps, so tables compare; the
  // shade follows the square root of the weight, so that the many small weights still show.
  function heatmap(weights, { name, caption, corner, rowLabels, columnLabels }) {
    const table = element("table", { class: "explorer-heatmap", "data-attention": name });
    table.append(element("caption", { text: caption }));
    const head = element("tr", {},
                         element("th", { scope: "col", class: "explorer-corner", text: corner }));
    columnLabels.forEach(({ letter, position }) => {
      head.append(element("th", { scope: "col", title: `input position ${position}` },
                          element("span", { class: "explorer-letter", text: show(letter) }),
                          element("span", { class: "explorer-position", text: String(position) })));
    });
    table.append(element("thead", {}, head));
    const body = element("tbody");
    weights.forEach((row, r) => {
      const tr = element("tr", {}, element("th", { scope: "row", text: rowLabels[r] }));
      row.forEach((weight, c) => {
        tr.append(element("td", {
          "data-row": String(r),
          "data-col": String(c),
          "data-weight": String(weight), // the shortest text that reads back as the same number
          title: `${rowLabels[r]} → position ${c} (${show(columnLabels[c].letter)}): ` +
                 weight.toFixed(4),
          style: `--shade: ${(100 * Math.sqrt(weight)).toFixed(1)}%`,
          class: weight > 0.36 ? "explorer-strong" : "", // a dark cell: light text
          text: weight.toFixed(2).replace(/^0\./, "."),
        }));
      });
      body.append(tr);
    });
    table.append(body);
    const legend = element("p", { class: "explorer-legend",
      text: "Each row sums to 1. Darker cells, more weight: the shade runs from 0 to 1 on a " +
            "square-root scale, so that small weights show." });
    return element("div", { class: "explorer-scroll" }, table, legend);
  }

  // Predicted and true value of each output step, with the model's probability.
  function predictionTable(labels, outputs, truths, stepHeader) {
    const table = element("table", { class: "explorer-predictions" });
    table.append(element("thead", {}, element("tr", {},
      ...[stepHeader, "prediction", "probability", "true answer"].map((text) =>
        element("th", { scope: "col", text })))));
    const body = element("tbody");
    outputs.forEach(({ prediction, probability }, t) => {
      const right = prediction === truths[t];
      body.append(element("tr", {},
        element("th", { scope: "row", text: labels[t] }),
        element("td", { "data-prediction": String(prediction), text: String(prediction) }),
        element("td", { "data-probability": String(probability), text: probability.toFixed(3) }),
        element("td", { "data-truth": String(truths[t]),
                        class: right ? "explorer-right" : "explorer-wrong",
                        text: `${truths[t]} ${right ? "✓ right" : "✗ wrong"}` })));
    });
    table.append(body);
    return table;
  }

  function heldOutNote(model) {
    if (!model.held_out) return "";
    const percent = (100 * model.held_out.exact_match).toFixed(1);
    return `This model (${model.label}) gets ${percent} % of ` +
           `${model.held_out.samples.toLocaleString("en")} held-out sequences entirely right.`;
  }

  function positions(text) {
    return [...text].map((letter, position) => ({ letter, position }));
  }

  /* ---- The two widgets ------------------------------------------------------------------- */

  // Shows the message and hides the results, or the other way round.
  function report(parts, error) {
    parts.message.textContent = error || "";
    parts.message.hidden = !error;
    parts.results.hidden = Boolean(error);
  }

  function parts(prefix) {
    const get = (name) => document.getElementById(`${prefix}-${name}`);
    return { input: get("input"), message: get("message"), results: get("results"),
             prediction: get("prediction"), attention: get("attention"), note: get("held-out") };
  }

  function countingWidget(model, example) {
    const ui = parts("counting");
    const update = () => {
      const text = ui.input.value;
      const encoded = encodeCounting(model, text);
      report(ui, encoded.error);
      if (encoded.error) return;
      const { outputs, attention } = countingForward(model, encoded.tokens);
      const letters = model.output_labels;
      const truths = letters.map( // CountingTask.targets_for: how often each letter occurs
        (letter) => encoded.tokens.filter((token) => model.alphabet[token] === letter).length);
      ui.prediction.replaceChildren(predictionTable(letters, outputs, truths, "letter"));
      const padded = text.padEnd(model.input_length, model.blank);
      ui.attention.replaceChildren(heatmap(attention["encoder-decoder"], {
        name: "encoder-decoder",
        caption: "Where each letter's query attends",
        corner: "query ↓ input →",
        rowLabels: letters.map((letter) => `${letter} query`),
        columnLabels: positions(padded),
      }));
    };
    ui.note.textContent = heldOutNote(model);
    ui.input.value = example;
    ui.input.addEventListener("input", update);
    update();
  }

  function signalWidget(models, example) {
    const ui = parts("signal");
    const select = document.getElementById("signal-encoding");
    const update = () => {
      const model = models[select.value];
      ui.note.textContent = heldOutNote(model);
      const text = ui.input.value;
      const encoded = encodeSignal(model, text);
      report(ui, encoded.error);
      if (encoded.error) return;
      const { outputs, attention } = signalForward(model, encoded.tokens);
      const [signal, ...rest] = encoded.tokens;
      const truth = rest.filter((token) => token === signal).length;
      ui.prediction.replaceChildren(predictionTable(
        [`${model.alphabet[signal]}s after the signal`], outputs, [truth], "output"));
      const columns = positions(text);
      ui.attention.replaceChildren(
        heatmap(attention["encoder-decoder"], {
          name: "encoder-decoder",
          caption: "Where the output step's query attends (over the encoded input)",
          corner: "query ↓ input →",
          rowLabels: ["output query"],
          columnLabels: columns,
        }),
        heatmap(attention["encoder self"], {
          name: "encoder self",
          caption: "Encoder self-attention: where each position attends",
          corner: "query ↓ key →",
          rowLabels: columns.map(({ letter, position }) => `${position} ${letter}`),
          columnLabels: columns,
        }),
      );
    };
    ui.input.value = example;
    ui.input.addEventListener("input", update);
    select.addEventListener("change", update);
    update();
  }

  // status: the element saying "loading"; data-ready on it tells tests (and you) how it went.
  async function start(status) {
    try {
      const response = await fetch(DATA_URL);
      if (!response.ok) throw new Error(`${DATA_URL} answered HTTP ${response.status}`);
      const data = await response.json();
      if (data.format !== FORMAT) throw new Error(`expected format ${FORMAT}, got ${data.format}`);
      countingWidget(loadModel(data.counting), data.examples.counting);
      const signal = {};
      for (const [encoding, exported] of Object.entries(data.signal)) {
        signal[encoding] = loadModel(exported);
      }
      signalWidget(signal, data.examples.signal);
      status.hidden = true;
      status.dataset.ready = "true";
    } catch (error) {
      status.textContent = `The explorer could not load its models: ${error.message}`;
      status.dataset.ready = "failed";
      throw error; // and into the console, where the site tests look
    }
  }

  const status = document.getElementById("explorer-status");
  if (status) start(status);
})();
