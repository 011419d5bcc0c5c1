/* The explorer page "Induction heads" (docs/explorer/induction-heads.md).
 *
 * The docs build exports the two-layer attention-only model of the chapter at a set of the
 * snapshots it saved in training (src/attnprimer/site/explorer/induction.py writes
 * assets/explorer/induction-heads.json). This script runs its forward pass on the steps of
 * explorer-nn.js, with heads switched off as the chapter's zero ablation does, and draws the
 * page with the helpers of explorer.js. Its state lives in the address's fragment:
 * #explore=induction&input=JQCMAETHSGCMAEKPL&step=750&head=2.1&off=1.2
 *
 * Shape legend, as in the package: L letters read, D model dim, H heads, V letters (the
 * logits have V + 1 entries: the blank, then the letters). Positions count from 0.
 */
(function () {
  "use strict";

  const FORMAT = 1; // attnprimer.site.explorer.induction.INDUCTION_FORMAT
  const DATA_URL = new URL("../assets/explorer/induction-heads.json", document.currentScript.src);
  const nn = window.attnprimerNN;
  const page = window.attnprimerExplorer;
  const { element } = page;

  /* ---- The model (attnprimer.models.attention_only.AttentionOnly) ------------------------ */

  // AttentionOnly.forward, with the heads in `off` zero-ablated as run_with(contexts=zeros)
  // does in the chapter: a head's context is replaced by zeros before the output projection.
  // tokens (L,) -> logits (L, V + 1), attention {"layer 1.1": (L, L), ...}.
  function attentionOnlyForward(model, w, tokens, off = []) {
    const length = tokens.length;
    let x = nn.add(nn.embed(tokens, w, "embed"), w["position.weight"].slice(0, length)); // (L, D)
    const attention = {};
    for (let layer = 1; layer <= model.layers; layer++) {
      const name = `blocks.${layer - 1}`;
      const normed = nn.layerNorm(x, w, `${name}.norm`); // pre-LN
      const heads = off.filter((head) => head.startsWith(`layer ${layer}.`))
        .map((head) => Number(head.split(".")[1]) - 1); // numbered from 0
      const { output, weights } = nn.multiHeadAttention(normed, normed, w, `${name}.attention`,
                                                        model.heads, nn.causal, heads);
      x = nn.add(x, output); // the residual stream: x + attention(norm(x))
      weights.forEach((headWeights, h) => { attention[`layer ${layer}.${h + 1}`] = headWeights; });
    }
    const logits = nn.linear(nn.layerNorm(x, w, "norm"), w, "readout"); // (L, V + 1)
    return { logits, attention };
  }

  // The cross-entropy of one prediction, in nats: -log softmax(logits)[target].
  function loss(logits, target) {
    const largest = Math.max(...logits);
    const total = logits.reduce((sum, value) => sum + Math.exp(value - largest), 0);
    return Math.log(total) + largest - logits[target];
  }

  /* ---- The repeat (attnprimer.site.explorer.induction.find_repeat) ----------------------- */

  // The longest segment of two letters or more that appears twice without overlapping:
  // {first, repeat, length}, or null. Ties: the earliest second occurrence, then first.
  function findRepeat(letters) {
    let best = null;
    for (let repeat = 0; repeat < letters.length; repeat++) {
      for (let first = 0; first < repeat; first++) {
        let length = 0;
        while (first + length < repeat && repeat + length < letters.length &&
               letters[first + length] === letters[repeat + length]) length++;
        if (length >= 2 && (!best || length > best.length)) best = { first, repeat, length };
      }
    }
    return best;
  }

  // InductionTask.repeats for one sequence, with Math.random: S random letters, one segment
  // of 4 to 12 letters written twice, each letter of it a successor of the one before along
  // the training pairs (or only the held-out ones). The model reads the first S - 1.
  function generate(data, heldOutPairs) {
    const { letters, sequence_length: size } = data;
    const [low, high] = data.repeat_lengths;
    const draw = (n) => Math.floor(Math.random() * n);
    const tokens = Array.from({ length: size }, () => letters[draw(letters.length)]);
    const length = low + draw(high - low + 1);
    const first = draw(size - 2 * length + 1);
    const repeat = first + length + draw(size - length - (first + length) + 1);
    const segment = [letters[draw(letters.length)]];
    while (segment.length < length) {
      const last = segment.at(-1);
      const held = data.held_out_successors[last];
      const next = [...letters].filter((letter) => letter !== last &&
                                       held.includes(letter) === heldOutPairs);
      segment.push(next[draw(next.length)]);
    }
    segment.forEach((letter, j) => { tokens[first + j] = letter; tokens[repeat + j] = letter; });
    return tokens.slice(0, size - 1).join("");
  }

  /* ---- Drawing ------------------------------------------------------------------------------ */

  // The letters, each with its position above and the model's next letter below: right or
  // wrong, and whether it is inside the repeat (the predictions copying can get right). A row
  // of small boxes that wraps, so that a phone shows all 31 without scrolling sideways.
  function predictionStrip(text, predictions, copyable) {
    const small = (className, content) => element("span", { class: className, text: content });
    const strip = element("ol", { class: "explorer-strip", start: "0",
                                  "aria-label": "each letter and the next letter predicted" });
    strip.append(element("li", { class: "explorer-strip-key", "aria-hidden": "true" },
                         small("explorer-position", "position"), small("explorer-letter", "letter"),
                         small("explorer-next", "next →")));
    predictions.forEach(({ prediction, probability, truth }, t) => {
      const known = truth !== null;
      const right = known && prediction === truth;
      const said = prediction === 0 ? "_" : letterOf(prediction); // 0: the blank
      const verdict = known ? (right ? "right" : `wrong, the next is ${letterOf(truth)}`)
        : "not typed yet";
      strip.append(element("li", {
        class: copyable.includes(t) ? "explorer-copyable" : null,
        title: `position ${t}, ${text[t]}: predicts ${said} (probability ` +
               `${probability.toFixed(3)}), ${verdict}`,
      }, small("explorer-position", String(t)), small("explorer-letter", text[t]),
      element("span", {
        "data-prediction": String(prediction), "data-probability": String(probability),
        "data-truth": known ? String(truth) : null,
        "data-copyable": copyable.includes(t) ? "true" : null,
        class: "explorer-next " +
               (known ? (right ? "explorer-right" : "explorer-wrong") : "explorer-unknown"),
        text: said,
      })));
    });
    const legend = element("p", { class: "explorer-legend", text: "Under each letter, the " +
      "letter the model predicts comes next. Green: right; red: wrong; grey: after the last " +
      "letter, not typed. Outlined: inside the repeat, where copying from the first " +
      "occurrence gets the next letter right." });
    return element("div", {}, element("p", { class: "explorer-strip-title",
                                              text: "Next-letter predictions" }), strip, legend);
  }

  let letterOf = (token) => String(token); // set from the data: token -> its letter

  const fixed = (value) => value.toFixed(2);
  const share = (right, count) => `${right} of ${count}`;

  /* ---- The widget --------------------------------------------------------------------------- */

  function widget(data, checkpoints) {
    const ui = page.parts("induction");
    const get = (name) => document.getElementById(`induction-${name}`);
    const [slider, stepShown, headSelect] = [get("step"), get("step-shown"), get("head")];
    const [generateButton, heldOutPairs, readout] = [get("generate"), get("pairs"), get("readout")];
    letterOf = (token) => data.alphabet[token];
    slider.max = String(checkpoints.length - 1);
    slider.value = slider.max;
    const names = [];
    for (let layer = 1; layer <= data.layers; layer++) {
      for (let head = 1; head <= data.heads; head++) names.push(`layer ${layer}.${head}`);
    }
    const role = (name) => (name === data.previous_head ? " (the previous-token head)"
      : name === data.induction_head ? " (the induction head)" : "");
    names.forEach((name) => headSelect.append(element("option", { value: name.slice(6),
                                                                  text: name + role(name) })));
    page.choose(headSelect, data.induction_head.slice(6));
    const switches = Object.fromEntries(names.map((name) => {
      const { box, label } = page.checkbox(`induction-off-${name.slice(6).replace(".", "-")}`,
                                           `head ${name.slice(6)}${role(name)}`);
      ui.interventions.append(label);
      return [name, box];
    }));
    const off = () => names.filter((name) => switches[name].checked);
    const checkpoint = () => checkpoints[Number(slider.value)];

    const update = () => {
      const { step, weights } = checkpoint();
      stepShown.textContent = `step ${step.toLocaleString("en")}` +
        (step === data.drop_step ? " (the drop)" : "");
      slider.setAttribute("aria-valuetext", stepShown.textContent);
      const shownHead = `layer ${headSelect.value}`;
      ui.note.textContent = `At step ${step.toLocaleString("en")}, over ` +
        `${data.samples.toLocaleString("en")} held-out sequences: loss on the repeat ` +
        `${fixed(checkpoint().repeat_loss)} nats a letter, on the first occurrence ` +
        `${fixed(checkpoint().first_loss)} (a uniform guess: ${fixed(data.chance)}). ` +
        `Head ${headSelect.value} there: previous-token score ` +
        `${fixed(checkpoint().previous_token[shownHead])}, induction score ` +
        `${fixed(checkpoint().induction[shownHead])}.`;
      const text = ui.input.value;
      const encoded = page.encodeText(text, { alphabet: data.alphabet, letters: data.letters,
                                              shortest: 1, longest: data.longest_input });
      page.report(ui, encoded.error);
      if (encoded.error) return;
      const { tokens } = encoded;
      const { logits, attention } = attentionOnlyForward(data, weights, tokens, off());
      const found = findRepeat(text);
      const range = (start, count) => Array.from({ length: Math.max(count, 0) },
                                                 (_, i) => start + i);
      // InductionTask's Repeats.predicted: predictions start .. start + length - 2
      const copyable = found ? range(found.repeat, found.length - 1) : [];
      const firstCopy = found ? range(found.first, found.length - 1) : [];
      const predictions = logits.map((row, t) => {
        const prediction = nn.argmax(row);
        return { prediction, probability: nn.softmax(row)[prediction],
                 truth: t + 1 < tokens.length ? tokens[t + 1] : null };
      });
      ui.prediction.replaceChildren(predictionStrip(text, predictions, copyable));
      const summary = (kept) => {
        const right = kept.filter((t) => predictions[t].prediction === tokens[t + 1]).length;
        const mean = kept.reduce((sum, t) => sum + loss(logits[t], tokens[t + 1]), 0) / kept.length;
        return { right, count: kept.length, loss: mean };
      };
      // The induction score of the shown head on this sequence: its mean weight, from each
      // query inside the repeat, on the letter after its letter's first occurrence.
      const targets = copyable.map((t) => [t, t - (found.repeat - found.first) + 1]);
      const headWeights = attention[shownHead];
      if (found) { // every prediction inside a repeat has its next letter typed
        const repeat = summary(copyable);
        const first = summary(firstCopy);
        const score = targets.reduce((sum, [t, s]) => sum + headWeights[t][s], 0) / targets.length;
        Object.assign(readout.dataset, { repeatLoss: repeat.loss, repeatRight: repeat.right,
                                         repeatCount: repeat.count, firstLoss: first.loss,
                                         score });
        const segment = text.slice(found.repeat, found.repeat + found.length);
        readout.textContent = `The repeat: ${segment}` +
          ` at ${found.first} and at ${found.repeat}. Inside it the model gets ` +
          `${share(repeat.right, repeat.count)} next letters right, at a loss of ` +
          `${fixed(repeat.loss)} nats a letter; in its first occurrence, ` +
          `${share(first.right, first.count)}, at ${fixed(first.loss)}. ` +
          `Head ${headSelect.value} puts ${fixed(score)} of its weight, on average, on the ` +
          "outlined cells of its heatmap, the letters to copy.";
      } else {
        Object.keys(readout.dataset).forEach((key) => { delete readout.dataset[key]; });
        readout.textContent = "No segment of two letters or more appears twice in what is " +
          "typed: nothing to copy.";
      }
      const isOff = switches[shownHead].checked;
      const map = page.heatmap(headWeights, {
        name: shownHead,
        caption: `Head ${headSelect.value}, step ${step.toLocaleString("en")}`,
        corner: "query ↓ key →",
        rowLabels: [...text].map((letter, t) => `${t} ${letter}`),
        columnLabels: page.positions(text),
        marked: copyable,
      });
      for (const [t, s] of targets) {
        const cell = map.querySelector(`td[data-row="${t}"][data-col="${s}"]`);
        cell.classList.add("explorer-target");
        cell.dataset.target = "true";
        cell.title += " (the letter to copy)";
      }
      const about = element("p", { class: "explorer-hint", text: `Head ${headSelect.value}` +
        `${role(shownHead)}: where each letter (a row) looks among the letters up to it.` +
        (isOff ? " It is switched off: its weights are computed, but what it reads no longer " +
                 "reaches the output." : "") });
      ui.attention.replaceChildren(about, map);
    };

    generateButton.addEventListener("click", () => {
      ui.input.value = generate(data, heldOutPairs.checked);
      induction.changed();
    });
    ui.input.value = data.example;
    const induction = {
      update, link: ui.link,
      state: () => {
        const state = { input: ui.input.value, step: String(checkpoint().step),
                        head: headSelect.value };
        if (off().length) state.off = off().map((name) => name.slice(6)).join(",");
        return state;
      },
      apply: (params) => {
        ui.input.value = params.get("input") ?? ui.input.value;
        const at = checkpoints.findIndex(({ step }) => String(step) === params.get("step"));
        if (at >= 0) slider.value = String(at);
        page.choose(headSelect, params.get("head"));
        const named = (params.get("off") || "").split(",");
        names.forEach((name) => { switches[name].checked = named.includes(name.slice(6)); });
      },
    };
    page.register("induction", induction,
                  [ui.input, slider, headSelect, ...Object.values(switches)]);
    return induction;
  }

  /* ---- Start --------------------------------------------------------------------------------- */

  async function start(status) {
    try {
      const response = await fetch(DATA_URL);
      if (!response.ok) throw new Error(`${DATA_URL} answered HTTP ${response.status}`);
      const data = await response.json();
      if (data.format !== FORMAT) throw new Error(`expected format ${FORMAT}, got ${data.format}`);
      const checkpoints = data.checkpoints.map((exported) => nn.loadModel(exported));
      const induction = widget(data, checkpoints);
      const opened = () => { // a link to an example: open it, and scroll to the widget
        const params = new URLSearchParams(location.hash.slice(1));
        if (params.get("explore") !== "induction") return;
        induction.apply(params);
        induction.changed();
        document.getElementById("induction-explorer").scrollIntoView();
      };
      opened();
      window.addEventListener("hashchange", opened);
      status.hidden = true;
      status.dataset.ready = "true";
    } catch (error) {
      status.textContent = `The explorer could not load its model: ${error.message}`;
      status.dataset.ready = "failed";
      throw error; // and into the console, where the site tests look
    }
  }

  const status = document.getElementById("induction-status");
  if (status) {
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", () => start(status));
    } else {
      start(status);
    }
  }
})();
