/* The attention explorer's sequence writers: the reversal models of the RNN and Bahdanau
 * chapters, and the Transformer of its chapter. Each writes the input backwards, one token a
 * step, fed its own previous token (greedy decoding), for S + 1 steps: S letters, then the end.
 *
 * Built on the helpers of explorer.js (drawing, the address's state) and the forward passes
 * of explorer-models.js; registered with explorer.js, which starts every widget once the
 * trained weights have loaded.
 */
(function () {
  "use strict";

  const page = window.attnprimerExplorer;
  const models = window.attnprimerModels;
  const { element } = page;
  const PLAY_STEP_MS = 600; // how long the animation shows each step

  // How the page writes an output token: a letter, the end mark, or "–" for padding.
  const say = (model) => (token) =>
    token === model.end ? model.end_symbol : token > 0 && token < model.end ? model.alphabet[token] : "–";

  // ReversalTask.targets_for, unpadded: the letters backwards, then the end token (S + 1).
  const reversed = (model, tokens) => [...tokens].reverse().concat([model.end]);

  // What the model wrote in the first `shown` steps, up to and including its end token.
  function writtenLine(model, text, outputs, truths, shown) {
    const tokens = outputs.slice(0, shown).map(({ prediction }) => prediction);
    const end = tokens.indexOf(model.end);
    const wrote = (end < 0 ? tokens : tokens.slice(0, end + 1)).map(say(model)).join("");
    const right = truths.slice(0, shown).every((truth, t) => truth === tokens[t]);
    const [shortest, longest] = model.trained_lengths;
    const line = element("p", { class: "explorer-written" },
      element("span", { text: `Wrote${shown < truths.length ? " so far" : ""}: ` }),
      element("code", { "data-written": wrote, text: wrote || "(nothing yet)" }), " ",
      element("span", { class: right ? "explorer-right" : "explorer-wrong",
                        text: right ? "✓ right" : `✗ the reversal is ${truths.map(say(model)).join("")}` }));
    if (text.length > longest) {
      line.append(element("span", { class: "explorer-longer",
        text: ` · ${text.length} letters: longer than any it trained on (${shortest} to ${longest})` }));
    }
    return line;
  }

  const stepLabels = (model, outputs) =>
    outputs.map(({ prediction }, t) => `step ${t}: ${say(model)(prediction)}`);

  // Fills a select with [value, text] options, keeping its value if it is still one of them.
  function refill(select, options) {
    const kept = select.value;
    select.replaceChildren(...options.map(([value, text]) => element("option", { value, text })));
    page.choose(select, kept);
  }

  /* ---- The GRU encoder-decoders ------------------------------------------------------------ */

  function reversalWidget(loaded) {
    const family = loaded.reversal;
    const ui = page.parts("reversal");
    const get = (name) => document.getElementById(`reversal-${name}`);
    const [steps, stepsShown, play] = [get("steps"), get("steps-shown"), get("play")];
    const [forceStep, forcePosition] = [get("force-step"), get("force-position")];
    let timer = null;

    const stop = () => {
      clearInterval(timer);
      timer = null;
      play.textContent = "Play";
      play.setAttribute("aria-pressed", "false");
    };

    const update = () => {
      const model = family[ui.model.value];
      const attention = model.decoder === "attention";
      ui.note.textContent = page.heldOutNote(model, "held-out inputs of " +
        `${model.trained_lengths[0]} to ${model.trained_lengths[1]} letters`);
      ui.interventions.disabled = !attention;
      get("no-attention").hidden = attention;
      const text = ui.input.value;
      const encoded = page.encodeText(text, { alphabet: model.alphabet, letters: model.letters,
                                              shortest: 1, longest: model.longest_input });
      page.report(ui, encoded.error);
      if (encoded.error) return stop();
      const tokens = encoded.tokens;
      const total = tokens.length + 1; // T = S + 1 steps
      steps.max = String(total); // a value above the new maximum drops to it
      const shown = Number(steps.value);
      stepsShown.textContent = `${shown} of ${total}`;
      refill(forceStep, [["", "none"], ...Array.from({ length: total }, (_, t) => [String(t), `step ${t}`])]);
      refill(forcePosition, tokens.map((token, s) => [String(s), `position ${s} (${text[s]})`]));
      const force = {};
      if (attention && forceStep.value !== "") force[Number(forceStep.value)] = Number(forcePosition.value);
      forcePosition.disabled = !attention || forceStep.value === "";
      const { outputs, attention: weights } = models.reversalForward(model, tokens, { force });
      const truths = reversed(model, tokens);
      const written = outputs.slice(0, shown);
      get("written").replaceChildren(writtenLine(model, text, outputs, truths, shown));
      ui.prediction.replaceChildren(element("details", { class: "explorer-details" },
        element("summary", { text: "Every step's prediction, with its probability" }),
        page.predictionTable(written.map((_, t) => `step ${t}`), written, truths, "step",
                             say(model))));
      if (!attention) {
        ui.attention.replaceChildren(element("p", { class: "explorer-hint", text:
          `The ${model.decoder} decoder has no attention weights to show: every step reads ` +
          (model.decoder === "peeky" ? "the same summary of the input, the encoder's last state."
            : "only its own state, which began as a learned map of the encoder's last state.") }));
        return undefined;
      }
      const forced = Object.keys(force).map(Number);
      ui.attention.replaceChildren(page.heatmap(weights["encoder-decoder"].slice(0, shown), {
        name: "encoder-decoder",
        caption: `Where each step reads the input (${shown} of ${total} steps written)` +
                 (forced.length ? `; step ${forced[0]} forced onto position ${force[forced[0]]}` : ""),
        corner: "step ↓ input →",
        rowLabels: stepLabels(model, written),
        columnLabels: page.positions(text),
        marked: forced,
      }));
      return undefined;
    };

    play.addEventListener("click", () => {
      if (timer) return stop();
      steps.value = "1";
      widget.changed();
      play.textContent = "Pause";
      play.setAttribute("aria-pressed", "true");
      timer = setInterval(() => {
        if (Number(steps.value) >= Number(steps.max)) return stop();
        steps.value = String(Number(steps.value) + 1);
        return widget.changed();
      }, PLAY_STEP_MS);
      return undefined;
    });
    // A new input is written in full: the slider goes to its end.
    // (The maximum first: a value is clamped to the maximum it is given under.)
    const showAll = () => {
      steps.max = "99";
      steps.value = "99";
    };
    ui.input.addEventListener("input", showAll);
    ui.input.value = loaded.examples.reversal;
    const widget = {
      update, link: ui.link,
      state: () => {
        const state = { model: ui.model.value, input: ui.input.value };
        if (steps.value !== steps.max) state.steps = steps.value;
        if (forceStep.value !== "") state.force = `${forceStep.value}:${forcePosition.value}`;
        return state;
      },
      apply: (params) => {
        stop();
        page.choose(ui.model, params.get("model"));
        ui.input.value = params.get("input") ?? ui.input.value;
        showAll();
        if (params.get("steps")) steps.value = params.get("steps");
        const [step, position] = (params.get("force") || ":").split(":");
        // the options follow the input: make them, then choose
        update();
        page.choose(forceStep, step);
        update();
        page.choose(forcePosition, position);
      },
    };
    page.register("reversal", widget, [ui.input, ui.model, steps, forceStep, forcePosition]);
  }

  /* ---- The Transformer ------------------------------------------------------------------------ */

  const KINDS = ["encoder self", "decoder self", "cross"];

  function transformerWidget(loaded) {
    const model = loaded.transformer["encoder-decoder"];
    const ui = page.parts("transformer");
    const get = (name) => document.getElementById(`transformer-${name}`);
    const [kind, layer, head, allOn] = [get("kind"), get("layer"), get("head"), get("all-on")];
    refill(layer, Array.from({ length: model.layers }, (_, l) => [String(l + 1), String(l + 1)]));
    refill(head, Array.from({ length: model.heads }, (_, h) => [String(h + 1), String(h + 1)]));

    // One checkbox per head: a row per attention layer, a column per head.
    const switches = {};
    const grid = element("table", { class: "explorer-heads" });
    grid.append(element("caption", { text: "Tick a head to switch it off" }),
                element("thead", {}, element("tr", {},
                  element("th", { scope: "col", text: "layer ↓ head →" }),
                  ...Array.from({ length: model.heads }, (_, h) =>
                    element("th", { scope: "col", text: String(h + 1) })))));
    const body = element("tbody");
    for (const name of KINDS) {
      for (let l = 1; l <= model.layers; l++) {
        const row = element("tr", {}, element("th", { scope: "row", text: `${name} ${l}` }));
        for (let h = 1; h <= model.heads; h++) {
          const headName = `${name} ${l}.${h}`;
          const id = `transformer-off-${name.replace(" ", "-")}-${l}-${h}`;
          const box = element("input", { type: "checkbox", id,
                                         "aria-label": `switch head ${headName} off` });
          switches[headName] = box;
          row.append(element("td", {}, box));
        }
        body.append(row);
      }
    }
    grid.append(body);
    ui.interventions.append(grid, allOn);
    const off = () => models.headNames(model).filter((name) => switches[name].checked);

    const update = () => {
      ui.note.textContent = page.heldOutNote(model, "held-out inputs of " +
        `${model.trained_lengths[0]} to ${model.trained_lengths[1]} letters`);
      const text = ui.input.value;
      const encoded = page.encodeText(text, { alphabet: model.alphabet, letters: model.letters,
                                              shortest: 1, longest: model.longest_input });
      page.report(ui, encoded.error);
      allOn.disabled = !off().length;
      if (encoded.error) return;
      const tokens = encoded.tokens;
      const result = models.transformerForward(model, tokens, { off: off() });
      const truths = reversed(model, tokens);
      const outputs = result.outputs;
      get("written").replaceChildren(writtenLine(model, text, outputs, truths, outputs.length));
      ui.prediction.replaceChildren(element("details", { class: "explorer-details" },
        element("summary", { text: "Every step's prediction, with its probability" }),
        page.predictionTable(outputs.map((_, t) => `step ${t}`), outputs, truths, "step",
                             say(model))));
      const map = `${kind.value} ${layer.value}.${head.value}`;
      const fed = result.fed.map((token, t) => ({ letter: t ? say(model)(token) : "^", position: t }));
      const decoderRows = fed.map(({ letter }, t) => `${t}: ${letter}→${say(model)(outputs[t].prediction)}`);
      const inputs = page.positions(text);
      const [rowLabels, columnLabels, corner] = {
        "encoder self": [inputs.map(({ letter, position }) => `${position} ${letter}`), inputs, "input ↓ input →"],
        "decoder self": [decoderRows, fed, "step ↓ fed →"],
        cross: [decoderRows, inputs, "step ↓ input →"],
      }[kind.value];
      const isOff = switches[map].checked;
      ui.attention.replaceChildren(page.heatmap(result.attention[map], {
        name: map,
        caption: `Head ${map}` + (isOff ? " (switched off: its weights are computed, but what it " +
                                          "reads no longer reaches the output)" : ""),
        corner, rowLabels, columnLabels,
      }));
    };

    allOn.addEventListener("click", () => {
      Object.values(switches).forEach((box) => { box.checked = false; });
      widget.changed();
      kind.focus(); // the button is now disabled: keep the keyboard's place nearby
    });
    ui.input.value = loaded.examples.transformer;
    const widget = {
      update, link: ui.link,
      state: () => {
        const state = { input: ui.input.value, map: `${kind.value} ${layer.value}.${head.value}` };
        if (off().length) state.off = off().join(",");
        return state;
      },
      apply: (params) => {
        ui.input.value = params.get("input") ?? ui.input.value;
        const map = /^(.+) (\d+)\.(\d+)$/.exec(params.get("map") || "");
        if (map) [kind, layer, head].forEach((select, i) => page.choose(select, map[i + 1]));
        const names = (params.get("off") || "").split(",");
        Object.entries(switches).forEach(([name, box]) => { box.checked = names.includes(name); });
      },
    };
    page.register("transformer", widget, [ui.input, kind, layer, head, ...Object.values(switches)]);
  }

  page.builders.push(reversalWidget, transformerWidget);
})();
