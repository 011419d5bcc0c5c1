/* The digit reader of "Attention over images", run in the browser.
 *
 * The forward pass of attnprimer.models.patch_reader.PatchReader, greedy, built from the steps
 * in explorer-nn.js and the encoder block of explorer-models.js; read it beside the Python.
 * The page (explorer-attention-over-images.js) draws the canvas and the maps.
 *
 * Shape legend, as in the package: Hi x Wi canvas, P patch size, N patches, D model dim,
 * T output steps, C classes. A canvas is an array of Hi rows of Wi pixel values in [0, 1].
 */
window.attnprimerPatchReader = (function () {
  "use strict";

  const nn = window.attnprimerNN;
  const { linear } = nn;

  // attnprimer.patches.patchify: canvas (Hi, Wi) -> patches (N, P*P), in row-major order,
  // each patch's pixels read row by row.
  function patchify(canvas, patch) {
    const patches = [];
    for (let top = 0; top < canvas.length; top += patch) {
      for (let left = 0; left < canvas[0].length; left += patch) {
        const pixels = [];
        for (let r = top; r < top + patch; r++) {
          for (let c = left; c < left + patch; c++) pixels.push(canvas[r][c]);
        }
        patches.push(pixels);
      }
    }
    return patches;
  }

  // attnprimer.site.explorer.images.blank_patches: the patches numbered in `blanked` set to
  // the background (0), as the chapter blanks them. canvas (Hi, Wi) -> (Hi, Wi).
  function blankPatches(canvas, blanked, patch) {
    const columns = canvas[0].length / patch; // Q patches a row
    return canvas.map((row, r) => row.map((value, c) => {
      const n = Math.floor(r / patch) * columns + Math.floor(c / patch);
      return blanked.includes(n) ? 0 : value;
    }));
  }

  // PatchEmbedding.forward: canvas (Hi, Wi) -> (N, D): a linear map of each patch's pixels,
  // plus the learned vector of its row and the one of its column.
  function embed(model, canvas) {
    const w = model.weights;
    const columns = model.width / model.patch; // Q
    const x = linear(patchify(canvas, model.patch), w, "embed.pixels"); // (N, P*P) -> (N, D)
    return x.map((row, n) => {
      const [r, q] = [Math.floor(n / columns), n % columns]; // attnprimer.patches.patch_grid
      return row.map((value, d) => value + w["embed.row"][r][d] + w["embed.col"][q][d]);
    });
  }

  // PatchReader.forward, greedy: canvas (Hi, Wi) -> logits (T, C), the predicted class of
  // each step, and the weights over the patches (T, N).
  function read(model, canvas) {
    const w = model.weights;
    // Self-attention, once: the patches' vectors (N, D)
    const memory = window.attnprimerModels.encoderBlock(embed(model, canvas), w, "mix", model,
                                                        null, []).x;
    // The mean of the patches (D,) starts the decoder: Decoder.initial_state
    const summary = memory[0].map((_, d) => memory.reduce((sum, row) => sum + row[d], 0) /
                                            memory.length);
    let state = linear([summary], w, "decoder.bridge")[0].map(Math.tanh); // (D,)
    const keys = linear(memory, w, "decoder.score.key_proj"); // W_k h, once: (N, D)
    let token = model.start; // the start token
    const logits = [];
    const weights = [];
    for (let step = 0; step < model.steps; step++) { // Decoder.step
      // The additive score v . tanh(W_q s + W_k h) of every patch, then the softmax: (N,)
      const projected = linear([state], w, "decoder.score.query_proj")[0]; // (D,)
      const scores = keys.map((key) =>
        nn.dot(key.map((k, a) => Math.tanh(k + projected[a])), w["decoder.score.v"]));
      const row = nn.softmax(scores); // every patch may be read
      const context = nn.weightedSum([row], memory)[0]; // (D,)
      const input = [...w["decoder.embed.weight"][token], ...context]; // (E + D,)
      state = nn.gruCell(input, state, w["decoder.cell.weight_ih"], w["decoder.cell.weight_hh"],
                         w["decoder.cell.bias_ih"], w["decoder.cell.bias_hh"]); // (D,)
      const stepLogits = linear([[...state, ...context]], w, "decoder.out")[0]; // (C,)
      logits.push(stepLogits);
      weights.push(row);
      token = nn.argmax(stepLogits); // greedy: fed its own answer
    }
    return { logits, predictions: logits.map(nn.argmax), weights };
  }

  return { blankPatches, embed, patchify, read };
})();
