/* The attention explorer's page: what the reader types and chooses, and what the models show.
 *
 * The docs build exports the trained weights (src/attnprimer/explorer.py writes
 * assets/explorer/models.json); explorer-models.js runs the models' forward passes and
 * interventions; this script reads the controls, draws the predictions and the heatmaps, and
 * keeps each widget's state in the address's fragment, so that a link opens the page on the
 * same example: #explore=reversal&model=attention&input=HEADBADGE&force=2%3A5
 *
 * The widgets of the sequence-writing models (reversal, Transformer) are in
 * explorer-sequences.js, which uses the helpers exported here. Nothing happens on a page
 * without the explorer's elements.
 */
window.attnprimerExplorer = (function () {
  "use strict";

  const FORMAT = 2; // attnprimer.site.explorer.export.EXPLORER_FORMAT
  const DATA_URL = new URL("../assets/explorer/models.json", document.currentScript.src);
  const models = window.attnprimerModels;
  const widgets = {}; // name -> {state(), apply(params), update(), link}

  /* ---- From text to tokens, as the tasks' encode() does --------------------------------- */

  // Letters (and, with a blank, spaces), between shortest and longest of them.
  // Returns {tokens} or {error}: a message for the reader, never an exception.
  function encodeText(text, { alphabet, letters, blank = null, shortest, longest }) {
    const allowed = blank ? letters + blank : letters;
    const unknown = [...new Set([...text].filter((char) => !allowed.includes(char)))];
    if (unknown.length) {
      const shown = unknown.map((char) => (char === " " ? "a space" : `“${char}”`));
      const lower = unknown.some((char) => allowed.includes(char.toUpperCase()));
      return { error: `Only the letters ${spell(letters)}${blank ? " and spaces" : ", no spaces"}, ` +
                      `please: this has ${shown.join(", ")}` + (lower ? " (letters are upper case)." : ".") };
    }
    if (text.length < shortest || text.length > longest) {
      const range = shortest === longest ? `exactly ${longest}`
        : shortest > 0 ? `${shortest} to ${longest}` : `at most ${longest}`;
      const noun = blank ? "character" : "letter";
      return { error: `That is ${text.length} ${noun}${text.length === 1 ? "" : "s"}; ` +
                      `the model reads ${range}.` };
    }
    return { tokens: [...text].map((char) => alphabet.indexOf(char)) };
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
      else if (value !== null && value !== undefined && value !== false) node.setAttribute(name, value);
    }
    node.append(...children);
    return node;
  }

  const show = (char) => (char === " " ? "␣" : char); // a blank, visibly

  // A heatmap of weights (rows, columns) as a table: one row per query, one column per key.
  // Each cell holds its weight to two decimals; data-weight has it at full precision.
  // data-attention names the weights as the model's output does ("encoder-decoder", ...).
  // The colour scale is fixed, 0 to 1, as in the chapters' heatmaps, so tables compare; the
  // shade follows the square root of the weight, so that the many small weights still show.
  // marked: row numbers whose label is highlighted (an intervention acts there).
  function heatmap(weights, { name, caption, corner, rowLabels, columnLabels, marked = [] }) {
    const table = element("table", { class: "explorer-heatmap", "data-attention": name });
    table.append(element("caption", { text: caption }));
    const head = element("tr", {},
                         element("th", { scope: "col", class: "explorer-corner", text: corner }));
    columnLabels.forEach(({ letter, position }) => {
      head.append(element("th", { scope: "col", title: `position ${position}` },
                          element("span", { class: "explorer-letter", text: show(letter) }),
                          element("span", { class: "explorer-position", text: String(position) })));
    });
    table.append(element("thead", {}, head));
    const body = element("tbody");
    weights.forEach((row, r) => {
      const label = element("th", { scope: "row", text: rowLabels[r],
                                    class: marked.includes(r) ? "explorer-marked" : null });
      const tr = element("tr", {}, label);
      row.forEach((weight, c) => {
        tr.append(element("td", {
          "data-row": String(r),
          "data-col": String(c),
          "data-weight": String(weight), // the shortest text that reads back as the same number
          title: `${rowLabels[r]} → position ${c} (${show(columnLabels[c].letter)}): ` +
                 weight.toFixed(4),
          style: `--shade: ${(100 * Math.sqrt(weight)).toFixed(1)}%`,
          class: weight > 0.36 ? "explorer-strong" : null, // a dark cell: light text
          text: weight.toFixed(2).replace(/^0\./, "."),
        }));
      });
      body.append(tr);
    });
    table.append(body);
    const legend = element("p", { class: "explorer-legend",
      text: "Each row sums to 1 (a row with every key blocked, to 0). Darker cells, more " +
            "weight: the shade runs from 0 to 1 on a square-root scale, so that small " +
            "weights show." });
    return element("div", { class: "explorer-scroll" }, table, legend);
  }

  // Predicted and true value of each output step, with the model's probability.
  // say(value) is how a class is written (a count as itself, a token as its letter).
  function predictionTable(labels, outputs, truths, stepHeader, say = String) {
    const table = element("table", { class: "explorer-predictions" });
    table.append(element("thead", {}, element("tr", {},
      ...[stepHeader, "prediction", "probability", "true answer"].map((text) =>
        element("th", { scope: "col", text })))));
    const body = element("tbody");
    outputs.forEach(({ prediction, probability }, t) => {
      const right = prediction === truths[t];
      body.append(element("tr", {},
        element("th", { scope: "row", text: labels[t] }),
        element("td", { "data-prediction": String(prediction), text: say(prediction) }),
        element("td", { "data-probability": String(probability), text: probability.toFixed(3) }),
        element("td", { "data-truth": String(truths[t]),
                        class: right ? "explorer-right" : "explorer-wrong",
                        text: `${say(truths[t])} ${right ? "✓ right" : "✗ wrong"}` })));
    });
    table.append(body);
    return element("div", { class: "explorer-scroll" }, table);
  }

  function heldOutNote(model, what = "held-out sequences") {
    if (!model.held_out) return "";
    const fraction = model.held_out.exact_match;
    // 99.99 % is not 100.0 %: more decimals where one would round to a perfect score.
    const percent = (100 * fraction).toFixed(fraction < 1 && fraction >= 0.9995 ? 2 : 1);
    return `This model (${model.label}) gets ${percent} % of ` +
           `${model.held_out.samples.toLocaleString("en")} ${what} entirely right.`;
  }

  function positions(text) {
    return [...text].map((letter, position) => ({ letter, position }));
  }

  // A labelled checkbox: <label><input type="checkbox"> text</label>.
  function checkbox(id, text, checked = false) {
    const box = element("input", { type: "checkbox", id, checked: checked ? "" : null });
    return { box, label: element("label", { class: "explorer-check", for: id }, box, ` ${text}`) };
  }

  /* ---- One widget's parts, and its state in the address ---------------------------------- */

  // Shows the message and hides the results, or the other way round.
  function report(ui, error) {
    ui.message.textContent = error || "";
    ui.message.hidden = !error;
    ui.results.hidden = Boolean(error);
  }

  function parts(prefix) {
    const get = (name) => document.getElementById(`${prefix}-${name}`);
    return { input: get("input"), model: get("model"), message: get("message"),
             results: get("results"), prediction: get("prediction"), attention: get("attention"),
             note: get("held-out"), link: get("link"), interventions: get("interventions") };
  }

  // The fragment that reopens widget `name` as it is now.
  function fragment(name) {
    return "#" + new URLSearchParams({ explore: name, ...widgets[name].state() }).toString();
  }

  // Registers a widget and wires it: any change to its controls redraws it and (for a change
  // the reader made) puts its state in the address, without adding a history entry.
  function register(name, widget, controls) {
    widgets[name] = widget;
    const changed = () => {
      widget.update();
      widget.link.href = fragment(name);
      history.replaceState(null, "", fragment(name));
    };
    for (const control of controls) { // text and sliders as they move; the rest on change
      const select = control.tagName === "SELECT" || control.type === "checkbox";
      control.addEventListener(select ? "change" : "input", changed);
    }
    widget.changed = changed;
    widget.update();
    widget.link.href = fragment(name);
  }

  // Opens the widget the address names, in the state it gives, and scrolls to it.
  function applyFragment() {
    const params = new URLSearchParams(location.hash.slice(1));
    const name = params.get("explore");
    if (!name || !(name in widgets)) return;
    const widget = widgets[name];
    widget.apply(params);
    widget.update();
    widget.link.href = fragment(name);
    document.getElementById(`${name}-explorer`).scrollIntoView();
  }

  // A select's value, if it has that option.
  function choose(select, value) {
    if (value !== null && [...select.options].some((option) => option.value === value)) {
      select.value = value;
    }
  }

  /* ---- Counting, signal and difference ---------------------------------------------------- */

  function countingWidget(model, example) {
    const ui = parts("counting");
    const letters = model.alphabet.slice(1);
    const update = () => {
      const text = ui.input.value;
      const encoded = encodeText(text, { alphabet: model.alphabet, letters, blank: model.blank,
                                         shortest: 0, longest: model.input_length });
      report(ui, encoded.error);
      if (encoded.error) return;
      const padded = text.padEnd(model.input_length, model.blank);
      const tokens = [...padded].map((char) => model.alphabet.indexOf(char));
      const { outputs, attention } = models.countingForward(model, tokens);
      const truths = model.output_labels.map( // CountingTask.targets_for: each letter's count
        (letter) => tokens.filter((token) => model.alphabet[token] === letter).length);
      ui.prediction.replaceChildren(predictionTable(model.output_labels, outputs, truths,
                                                    "letter"));
      ui.attention.replaceChildren(heatmap(attention["encoder-decoder"], {
        name: "encoder-decoder",
        caption: "Where each letter's query attends",
        corner: "query ↓ input →",
        rowLabels: model.output_labels.map((letter) => `${letter} query`),
        columnLabels: positions(padded),
      }));
    };
    ui.note.textContent = heldOutNote(model);
    ui.input.value = example;
    register("counting", {
      update, link: ui.link,
      state: () => ({ input: ui.input.value }),
      apply: (params) => { ui.input.value = params.get("input") ?? ui.input.value; },
    }, [ui.input]);
  }

  function signalWidget(family, example) {
    const ui = parts("signal");
    const update = () => {
      const model = family[ui.model.value];
      ui.note.textContent = heldOutNote(model);
      const text = ui.input.value;
      const encoded = encodeText(text, { alphabet: model.alphabet, letters: model.letters,
                                         shortest: model.input_length,
                                         longest: model.input_length });
      report(ui, encoded.error);
      if (encoded.error) return;
      const { outputs, attention } = models.signalForward(model, encoded.tokens);
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
    register("signal", {
      update, link: ui.link,
      state: () => ({ model: ui.model.value, input: ui.input.value }),
      apply: (params) => {
        choose(ui.model, params.get("model"));
        ui.input.value = params.get("input") ?? ui.input.value;
      },
    }, [ui.input, ui.model]);
  }

  function differenceWidget(family, example) {
    const ui = parts("difference");
    const labels = Object.values(family)[0].output_labels; // A, B, C, |A-B|
    const last = labels.length - 1;
    const blocks = labels.map((label, step) => checkbox(`difference-block-${step}`,
      step === last ? "itself" : `the ${label} step`));
    const swap = checkbox("difference-swap", "swap its weights on the A and B steps");
    ui.interventions.append(
      element("legend", { text: `What the ${labels[last]} step reads through self-attention` }),
      element("p", { class: "explorer-hint", text: "Block (the softmax shares the weight " +
                                                  "among the steps left):" }),
      ...blocks.map(({ label }) => label), swap.label,
      element("p", { class: "explorer-hint", id: "difference-no-self",
                     text: "This model has no self-attention over its outputs: nothing to block." }));
    const blocked = () => blocks.flatMap(({ box }, step) => (box.checked ? [step] : []));
    const update = () => {
      const model = family[ui.model.value];
      ui.note.textContent = heldOutNote(model);
      const selfAttention = Boolean(model.self_attention);
      ui.interventions.disabled = !selfAttention;
      document.getElementById("difference-no-self").hidden = selfAttention;
      const text = ui.input.value;
      const encoded = encodeText(text, { alphabet: model.alphabet, letters: model.alphabet.slice(1),
                                         blank: model.blank, shortest: 0,
                                         longest: model.input_length });
      report(ui, encoded.error);
      if (encoded.error) return;
      const padded = text.padEnd(model.input_length, model.blank);
      const tokens = [...padded].map((char) => model.alphabet.indexOf(char));
      const interventions = selfAttention ? { blocked: blocked(), swap: swap.box.checked } : {};
      const { outputs, attention } = models.differenceForward(model, tokens, interventions);
      const counts = labels.slice(0, last).map( // DifferenceTask.targets_for
        (letter) => tokens.filter((token) => model.alphabet[token] === letter).length);
      const truths = [...counts, Math.abs(counts[0] - counts[1])];
      ui.prediction.replaceChildren(predictionTable(labels, outputs, truths, "step"));
      const maps = [heatmap(attention["encoder-decoder"], {
        name: "encoder-decoder",
        caption: "Where each step's query reads the input",
        corner: "query ↓ input →",
        rowLabels: labels.map((label) => `${label} query`),
        columnLabels: positions(padded),
      })];
      if (selfAttention) {
        const changedRow = interventions.blocked.length || interventions.swap;
        maps.push(heatmap(attention.self, {
          name: "self",
          caption: "Self-attention over the output steps: what each step reads of the others" +
                   (changedRow ? ` (the ${labels[last]} row as the intervention set it)` : ""),
          corner: "step ↓ reads →",
          rowLabels: labels,
          columnLabels: labels.map((label, position) => ({ letter: label, position })),
          marked: changedRow ? [last] : [],
        }));
      }
      ui.attention.replaceChildren(...maps);
    };
    ui.input.value = example;
    register("difference", {
      update, link: ui.link,
      state: () => {
        const state = { model: ui.model.value, input: ui.input.value };
        if (blocked().length) state.block = blocked().join(",");
        if (swap.box.checked) state.swap = "1";
        return state;
      },
      apply: (params) => {
        choose(ui.model, params.get("model"));
        ui.input.value = params.get("input") ?? ui.input.value;
        const block = (params.get("block") || "").split(",").filter(Boolean).map(Number);
        blocks.forEach(({ box }, step) => { box.checked = block.includes(step); });
        swap.box.checked = params.get("swap") === "1";
      },
    }, [ui.input, ui.model, swap.box, ...blocks.map(({ box }) => box)]);
  }

  /* ---- Start ----------------------------------------------------------------------------- */

  const builders = []; // (data) => void, from explorer-sequences.js too

  // status: the element saying "loading"; data-ready on it tells tests (and you) how it went.
  async function start(status) {
    try {
      const response = await fetch(DATA_URL);
      if (!response.ok) throw new Error(`${DATA_URL} answered HTTP ${response.status}`);
      const data = await response.json();
      if (data.format !== FORMAT) throw new Error(`expected format ${FORMAT}, got ${data.format}`);
      const load = window.attnprimerNN.loadModel;
      const family = (group) => Object.fromEntries(
        Object.entries(group).map(([variant, exported]) => [variant, load(exported)]));
      const loaded = { counting: load(data.counting), signal: family(data.signal),
                       difference: family(data.difference), reversal: family(data.reversal),
                       transformer: family(data.transformer), examples: data.examples };
      countingWidget(loaded.counting, data.examples.counting);
      signalWidget(loaded.signal, data.examples.signal);
      differenceWidget(loaded.difference, data.examples.difference);
      builders.forEach((build) => build(loaded));
      applyFragment();
      window.addEventListener("hashchange", applyFragment);
      status.hidden = true;
      status.dataset.ready = "true";
    } catch (error) {
      status.textContent = `The explorer could not load its models: ${error.message}`;
      status.dataset.ready = "failed";
      throw error; // and into the console, where the site tests look
    }
  }

  function whenReady() {
    const status = document.getElementById("explorer-status");
    if (status) start(status);
  }
  // Every script of the page has run by DOMContentLoaded, explorer-sequences.js included.
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", whenReady);
  else setTimeout(whenReady);

  return { builders, checkbox, choose, element, encodeText, heatmap, heldOutNote, parts,
           positions, predictionTable, register, report, show };
})();
