/* The explorer page "Reading digits": a canvas the reader draws on, read by the patch reader.
 *
 * The docs build exports the trained digit reader, the held-out digit images and the
 * chapter's example canvas (attnprimer.site.explorer.images writes
 * assets/explorer/attention-over-images.json); explorer-patch-reader.js runs the model; this
 * script keeps the canvas, draws it and the map of each output step, and keeps the canvas and
 * its blanked patches in the address: #canvas=<one character per pixel>&blank=3,17
 *
 * A pixel holds a level from 0 (background) to 16, as scikit-learn's digits do; the model
 * reads level / 16. Nothing happens on a page without the widget's elements.
 */
(function () {
  "use strict";

  const FORMAT = 1; // attnprimer.site.explorer.images.IMAGES_FORMAT
  const DATA_URL = new URL("../assets/explorer/attention-over-images.json",
                           document.currentScript.src);
  const LEVEL_DIGITS = "0123456789abcdefg"; // images.encode_canvas: one character per level
  const DIGIT = 8; // a held-out digit is 8 x 8 pixels
  const { element, heldOutNote } = window.attnprimerExplorer;
  const reader = window.attnprimerPatchReader;
  const get = (name) => document.getElementById(`images-${name}`);

  let model; // the exported reader, its weights decoded
  let digits; // {images: [64 characters], labels}
  let example; // the chapter's canvas, as 640 characters
  let levels; // the canvas: (Hi, Wi) levels 0 to 16
  const blanked = new Set(); // the patches set to the background, numbered row by row
  const maps = []; // per output step: {figure, caption, background, cells}
  let drawPreview = () => {}; // the chosen held-out scan, drawn small

  /* ---- The canvas as levels, and as text ------------------------------------------------ */

  const empty = () => Array.from({ length: model.height }, () => new Array(model.width).fill(0));

  // Text of one character per pixel -> levels (rows, columns); null if it does not fit.
  function decode(text, rows, columns) {
    if (typeof text !== "string" || text.length !== rows * columns) return null;
    const values = [...text].map((char) => LEVEL_DIGITS.indexOf(char));
    if (values.some((value) => value < 0)) return null;
    return Array.from({ length: rows }, (_, r) => values.slice(r * columns, (r + 1) * columns));
  }

  const encode = (rows) => rows.flat().map((level) => LEVEL_DIGITS[level]).join("");

  // What the model reads: level / 16, with the blanked patches set to the background.
  function modelInput() {
    const values = levels.map((row) => row.map((level) => level / model.levels));
    return reader.blankPatches(values, [...blanked], model.patch);
  }

  // Paste held-out image `index` with its top left pixel at (row, column); where two digits
  // overlap, their levels add up, to at most 16 (digit_canvas.paint adds them too).
  function place(index, row, column) {
    const image = decode(digits.images[index], DIGIT, DIGIT);
    image.forEach((values, r) => values.forEach((level, c) => {
      const [y, x] = [row + r, column + c];
      if (y < model.height && x < model.width) {
        levels[y][x] = Math.min(model.levels, levels[y][x] + level);
      }
    }));
  }

  // A random held-out canvas, as DigitReadingTask lays one out (digit_canvas.sample_layout):
  // 2 to 4 digits, their columns apart, each at a random height.
  function randomCanvas() {
    const randint = (low, high) => low + Math.floor(Math.random() * (high - low + 1));
    const count = randint(2, 4);
    const free = model.width - DIGIT * count;
    const cuts = Array.from({ length: count }, () => randint(0, free)).sort((a, b) => a - b);
    levels = empty();
    blanked.clear();
    cuts.forEach((cut, k) => place(randint(0, digits.images.length - 1),
                                   randint(0, model.height - DIGIT), cut + DIGIT * k));
  }

  /* ---- Drawing with a mouse, a pen or a finger --------------------------------------------- */

  // A soft round brush at (x, y), in pixels: full ink within half a pixel of its centre,
  // fading to none at 1.5 pixels, like the edges of the scanned digits. Erasing lowers levels.
  function brush(x, y, erase) {
    for (let r = Math.floor(y - 2); r <= y + 2; r++) {
      for (let c = Math.floor(x - 2); c <= x + 2; c++) {
        if (r < 0 || c < 0 || r >= model.height || c >= model.width) continue;
        const distance = Math.hypot(c + 0.5 - x, r + 0.5 - y);
        const level = Math.round(model.levels * Math.min(1, Math.max(0, 1.5 - distance)));
        levels[r][c] = erase ? Math.min(levels[r][c], model.levels - level)
          : Math.max(levels[r][c], level);
      }
    }
  }

  function drawing(canvas) {
    let last = null;
    const at = (event) => {
      const box = canvas.getBoundingClientRect();
      return [(event.clientX - box.left) / box.width * model.width,
              (event.clientY - box.top) / box.height * model.height];
    };
    const stroke = (event) => {
      const [x, y] = at(event);
      const [x0, y0] = last || [x, y];
      const steps = Math.max(1, Math.ceil(4 * Math.hypot(x - x0, y - y0))); // every 1/4 pixel
      for (let i = 1; i <= steps; i++) {
        brush(x0 + (x - x0) * i / steps, y0 + (y - y0) * i / steps, get("brush").value === "erase");
      }
      last = [x, y];
      paint();
    };
    canvas.addEventListener("pointerdown", (event) => {
      canvas.setPointerCapture(event.pointerId);
      last = null;
      stroke(event);
      event.preventDefault();
    });
    canvas.addEventListener("pointermove", (event) => { if (last) stroke(event); });
    const end = () => { if (last) { last = null; changed(); } };
    canvas.addEventListener("pointerup", end);
    canvas.addEventListener("pointercancel", end);
  }

  /* ---- Drawing the canvas and the maps ------------------------------------------------------ */

  // Draws levels (rows, columns) on a <canvas> of as many pixels: the ink is the scheme's text
  // colour, as opaque as the level is high, over the canvas's background; then it marks the
  // blanked patches, if asked to.
  function drawLevels(canvas, values, marks) {
    const context = canvas.getContext("2d");
    const ink = (getComputedStyle(canvas).color.match(/[\d.]+/g) || [0, 0, 0]).map(Number);
    const image = context.createImageData(canvas.width, canvas.height);
    values.flat().forEach((level, i) => {
      for (let k = 0; k < 3; k++) image.data[4 * i + k] = ink[k];
      image.data[4 * i + 3] = Math.round(255 * level / model.levels);
    });
    context.putImageData(image, 0, 0);
    if (!marks) return;
    context.fillStyle = getComputedStyle(canvas).getPropertyValue("--images-blank").trim();
    const columns = model.width / model.patch;
    for (const n of blanked) {
      const [top, left] = [Math.floor(n / columns) * model.patch, (n % columns) * model.patch];
      context.fillRect(left, top, model.patch, model.patch);
    }
  }

  function paint() {
    drawLevels(get("canvas"), levels, true);
  }

  const say = (value) => (value === model.end ? "end" : value < model.end ? String(value) : "?");

  // What the model wrote, up to its end, as words ("7", "2", "end") and as
  // DigitReadingTask.describe_output writes it ("72.").
  function written(predictions) {
    const done = predictions.indexOf(model.end);
    const words = predictions.slice(0, done >= 0 ? done + 1 : undefined).map(say);
    return { words, text: words.map((word) => (word === "end" ? "." : word)).join("") };
  }

  // The maps' elements, made once: a <canvas> of what the model read under a grid of one
  // button per patch. A map is one stop for the Tab key; the arrow keys move between its
  // patches, and Enter or Space blanks one (or brings it back).
  function buildMaps() {
    const columns = model.width / model.patch;
    const count = (model.height / model.patch) * columns;
    for (let step = 0; step < model.steps; step++) {
      const caption = element("figcaption");
      const background = element("canvas", { class: "images-canvas", width: model.width,
                                             height: model.height, "aria-hidden": "true" });
      const grid = element("div", { class: "images-grid", role: "group",
                                    "aria-label": `Map of step ${step}` });
      const cells = [];
      for (let n = 0; n < count; n++) {
        const cell = element("button", { type: "button", class: "images-patch",
          id: `images-patch-${step}-${n}`, "data-patch": String(n),
          tabindex: n === 0 ? "0" : "-1" });
        cell.addEventListener("click", () => toggle(n));
        cell.addEventListener("keydown", (event) => {
          const move = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -columns, ArrowDown: columns };
          const next = n + (move[event.key] ?? NaN);
          if (!(next >= 0 && next < count)) return;
          event.preventDefault();
          cell.tabIndex = -1;
          cells[next].tabIndex = 0;
          cells[next].focus();
        });
        cells.push(cell);
      }
      grid.append(...cells);
      const figure = element("figure", { class: "images-map", "data-step": String(step) },
                             element("div", { class: "images-stage" }, background, grid),
                             caption);
      maps.push({ figure, caption, background, cells });
    }
    get("maps").append(...maps.map(({ figure }) => figure));
  }

  function toggle(n) {
    if (blanked.has(n)) blanked.delete(n);
    else blanked.add(n);
    changed();
  }

  // Reads the canvas again and shows what the model wrote and where each step looked.
  function update() {
    paint();
    drawPreview(); // in the scheme's colours too
    const input = modelInput();
    const { predictions, weights } = reader.read(model, input);
    const { words, text } = written(predictions);
    const shown = get("written");
    shown.dataset.written = text;
    shown.textContent = words.join(" ");
    const done = predictions.indexOf(model.end);
    const inputLevels = input.map((row) => row.map((value) => value * model.levels));
    maps.forEach(({ figure, caption, background, cells }, step) => {
      const after = done >= 0 && step > done;
      figure.dataset.prediction = String(predictions[step]);
      figure.classList.toggle("images-after", after);
      caption.textContent = after ? `Step ${step}: after the end (${say(predictions[step])})`
        : `Step ${step} writes ${say(predictions[step])}`;
      drawLevels(background, inputLevels, false);
      cells.forEach((cell, n) => {
        const weight = weights[step][n];
        cell.dataset.weight = String(weight); // full precision, for the site's tests
        cell.style.setProperty("--shade", `${(85 * Math.sqrt(weight)).toFixed(1)}%`);
        cell.setAttribute("aria-pressed", String(blanked.has(n)));
        const label = `step ${step}, patch ${n} (row ${Math.floor(n / (model.width / model.patch))}` +
          `, column ${n % (model.width / model.patch)}): weight ${weight.toFixed(3)}` +
          (blanked.has(n) ? ", blanked" : "");
        cell.setAttribute("aria-label", label);
        cell.title = `${label}. Click to ${blanked.has(n) ? "bring it back" : "blank it"}.`;
      });
    });
    get("unblank").disabled = blanked.size === 0;
    get("link").href = fragment();
  }

  function fragment() {
    const state = { canvas: encode(levels) };
    if (blanked.size) state.blank = [...blanked].sort((a, b) => a - b).join(",");
    return "#" + new URLSearchParams(state).toString();
  }

  // A change the reader made: read again, and put the state in the address.
  function changed() {
    update();
    history.replaceState(null, "", fragment());
  }

  // The canvas and blanked patches the address gives, or the chapter's canvas.
  function applyFragment() {
    const params = new URLSearchParams(location.hash.slice(1));
    const given = decode(params.get("canvas"), model.height, model.width);
    const message = get("message");
    message.hidden = !(params.has("canvas") && !given);
    message.textContent = message.hidden ? ""
      : "The link's canvas is not one this page wrote; here is the chapter's canvas instead.";
    levels = given || decode(example, model.height, model.width);
    blanked.clear();
    const patches = (model.height / model.patch) * (model.width / model.patch);
    for (const part of (params.get("blank") || "").split(",")) {
      const n = Number(part);
      if (part !== "" && Number.isInteger(n) && n >= 0 && n < patches) blanked.add(n);
    }
    update();
  }

  /* ---- Placing a held-out digit ------------------------------------------------------------ */

  // Held-out images of the chosen digit, in the order of the split.
  const ofDigit = (digit) => digits.labels.flatMap((label, i) => (label === digit ? [i] : []));

  function chosenImage() {
    const images = ofDigit(Number(get("digit").value));
    const which = Math.min(images.length, Math.max(1, Math.round(Number(get("which").value)) || 1));
    return images[which - 1];
  }

  function wirePlacing() {
    const digit = get("digit");
    digit.append(...[...Array(10).keys()].map((d) => element("option", { value: d, text: d })));
    const preview = () => {
      get("which").max = String(ofDigit(Number(digit.value)).length);
      drawLevels(get("preview"), decode(digits.images[chosenImage()], DIGIT, DIGIT), false);
    };
    drawPreview = preview;
    get("row").max = String(model.height - DIGIT);
    get("column").max = String(model.width - DIGIT);
    digit.addEventListener("change", preview);
    get("which").addEventListener("input", preview);
    const clamp = (node) => Math.min(Number(node.max), Math.max(0, Math.round(Number(node.value)) || 0));
    get("place").addEventListener("click", () => {
      place(chosenImage(), clamp(get("row")), clamp(get("column")));
      changed();
    });
    dragging(get("preview"), get("canvas"), (row, column) => {
      get("row").value = String(row);
      get("column").value = String(column);
      get("row").value = String(clamp(get("row")));
      get("column").value = String(clamp(get("column")));
      get("place").click();
    });
    preview();
  }

  // Drag the scan's preview onto the canvas and let go: it is placed centred where it was let
  // go, the fields set to that place, as if they had been typed.
  function dragging(tile, canvas, drop) {
    tile.addEventListener("pointerdown", (event) => {
      tile.setPointerCapture(event.pointerId);
      tile.classList.add("images-dragged");
      event.preventDefault();
    });
    tile.addEventListener("pointerup", (event) => {
      tile.classList.remove("images-dragged");
      const box = canvas.getBoundingClientRect();
      const [x, y] = [event.clientX - box.left, event.clientY - box.top];
      if (x < 0 || y < 0 || x > box.width || y > box.height) return; // not on the canvas
      drop(Math.round(y / box.height * model.height - DIGIT / 2),
           Math.round(x / box.width * model.width - DIGIT / 2));
    });
    tile.addEventListener("pointercancel", () => tile.classList.remove("images-dragged"));
  }

  /* ---- Start ------------------------------------------------------------------------------- */

  async function start(status) {
    try {
      const response = await fetch(DATA_URL);
      if (!response.ok) throw new Error(`${DATA_URL} answered HTTP ${response.status}`);
      const data = await response.json();
      if (data.format !== FORMAT) throw new Error(`expected format ${FORMAT}, got ${data.format}`);
      model = window.attnprimerNN.loadModel(data.reader);
      ({ digits } = data);
      example = data.example.canvas;
      get("held-out").textContent = heldOutNote(model, "held-out canvases");
      buildMaps();
      wirePlacing();
      drawing(get("canvas"));
      const on = (name, action) => get(name).addEventListener("click", () => { action(); changed(); });
      on("clear", () => { levels = empty(); blanked.clear(); });
      on("random", randomCanvas);
      on("example", () => { levels = decode(example, model.height, model.width); blanked.clear(); });
      on("unblank", () => blanked.clear());
      applyFragment();
      window.addEventListener("hashchange", applyFragment);
      // The light and dark schemes draw the canvas in their own colours.
      new MutationObserver(update).observe(document.body,
                                           { attributes: true, attributeFilter: ["data-md-color-scheme"] });
      status.hidden = true;
      status.dataset.ready = "true";
    } catch (error) {
      status.textContent = `The explorer could not load its model: ${error.message}`;
      status.dataset.ready = "failed";
      throw error;
    }
  }

  function whenReady() {
    const status = get("status");
    if (status) start(status);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", whenReady);
  else setTimeout(whenReady);
})();
