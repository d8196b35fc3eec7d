// The edit form's arguments editor: one field per argument from the tool's JSON Schema where the schema
// is simple, else (or where the arguments hold hidden characters) the arguments as JSON.

import { hasHidden, visibleText } from "./hidden.js";
import { visibleJson } from "./json.js";

function simpleSchema(schema, args) {
  if (!schema || schema.type !== "object" || !schema.properties) return false;
  return Object.keys(args).every((key) => key in schema.properties);
}

// An editor of ``args`` in ``holder``: ``read()`` gives {value, errors}.
export function buildEditor(holder, schema, args) {
  // A text input would show hidden characters raw; the JSON editor shows them escaped and keeps them exact.
  if (hasHidden(args)) return jsonEditor(holder, schema, args, true);
  return simpleSchema(schema, args) ? schemaEditor(holder, schema, args) : jsonEditor(holder, schema, args, false);
}

function field(holder, name, labelText, control, hint) {
  const label = document.createElement("label");
  label.className = "field";
  const title = document.createElement("span");
  title.className = "field-name";
  title.textContent = labelText;
  label.appendChild(title);
  if (hint) {
    const small = document.createElement("span");
    small.className = "muted";
    small.textContent = " " + hint;
    title.appendChild(small);
  }
  label.appendChild(control);
  const error = document.createElement("span");
  error.className = "field-error";
  label.appendChild(error);
  holder.appendChild(label);
  return error;
}

function schemaEditor(holder, schema, args) {
  const required = new Set(schema.required || []);
  const inputs = [];
  for (const [name, prop] of Object.entries(schema.properties)) {
    const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== "null") : prop.type;
    const current = args[name];
    let control;
    if (Array.isArray(prop.enum)) {
      control = document.createElement("select");
      if (!required.has(name)) control.appendChild(new Option("(leave out)", ""));
      prop.enum.forEach((v) => control.appendChild(new Option(visibleText(String(v)), JSON.stringify(v))));
      if (current !== undefined) control.value = JSON.stringify(current);
    } else if (type === "boolean") {
      // A choice, not a checkbox: an unchecked box would turn an argument the model left out (whose
      // default the tool decides) into an explicit false the moment any other field is edited.
      control = document.createElement("select");
      if (!required.has(name) || current === undefined) control.appendChild(new Option("(leave out)", ""));
      control.appendChild(new Option("true", "true"));
      control.appendChild(new Option("false", "false"));
      control.value = current === undefined ? "" : JSON.stringify(current);
    } else if (type === "integer" || type === "number") {
      control = document.createElement("input");
      control.type = "number";
      control.step = type === "integer" ? "1" : "any";
      if (current !== undefined) control.value = String(current);
    } else if (type === "string") {
      const long = (prop.maxLength || 0) > 200 || (typeof current === "string" && current.length > 60);
      control = document.createElement(long ? "textarea" : "input");
      if (current !== undefined) control.value = current;
    } else {
      control = document.createElement("textarea");
      control.className = "json-input";
      if (current !== undefined) control.value = visibleJson(current);
    }
    control.name = "arg-" + name;
    control.dataset.arg = name;
    const hint = (required.has(name) ? "required" : "optional") + (prop.description ? " · " + prop.description : "");
    const error = field(holder, name, name, control, hint);
    inputs.push({ name, prop, type, control, error, required: required.has(name) });
  }
  return {
    read() {
      const value = {};
      const errors = [];
      for (const input of inputs) {
        input.error.textContent = "";
        const problem = readInput(input, value);
        if (problem) { input.error.textContent = problem; errors.push(input.name + ": " + problem + "."); }
      }
      return { value, errors };
    },
  };
}

function readInput(input, out) {
  const { name, prop, type, control } = input;
  if (control.tagName === "SELECT") {  // an enum, or a boolean
    if (control.value === "") return input.required ? "choose a value" : null;
    out[name] = JSON.parse(control.value);
    return null;
  }
  const raw = control.value;
  if (raw === "") {
    if (input.required && type !== "string") return "a value is required";
    if (input.required) { out[name] = ""; return checkValue("", prop); }
    return null;
  }
  let value;
  if (type === "integer" || type === "number") {
    value = Number(raw);
    if (!Number.isFinite(value)) return "not a number";
    if (type === "integer" && !Number.isInteger(value)) return "must be a whole number";
  } else if (type === "string") {
    value = raw;
  } else {
    try { value = JSON.parse(raw); } catch (err) { return "not valid JSON"; }
    if (type === "array" && !Array.isArray(value)) return "must be a JSON array";
    if (type === "object" && (value === null || typeof value !== "object" || Array.isArray(value))) return "must be a JSON object";
  }
  out[name] = value;
  return checkValue(value, prop);
}

function checkValue(value, prop) {
  if (typeof value === "string") {
    if (prop.minLength !== undefined && value.length < prop.minLength) return "at least " + prop.minLength + " characters";
    if (prop.maxLength !== undefined && value.length > prop.maxLength) return "at most " + prop.maxLength + " characters";
    if (prop.pattern && !new RegExp(prop.pattern, "u").test(value)) return "must match " + prop.pattern;
  }
  if (typeof value === "number") {
    if (prop.minimum !== undefined && value < prop.minimum) return "at least " + prop.minimum;
    if (prop.maximum !== undefined && value > prop.maximum) return "at most " + prop.maximum;
  }
  return null;
}

function jsonEditor(holder, schema, args, hidden) {
  if (hidden) {
    const notice = document.createElement("p");
    notice.className = "notice hidden-chars";
    notice.textContent = "These arguments contain hidden or control characters, shown as \\u escapes. " +
      "The escapes stand for the characters themselves: left as they are, they are sent unchanged.";
    holder.appendChild(notice);
  }
  const area = document.createElement("textarea");
  area.className = "json-input";
  area.name = "args-json";
  area.rows = 8;
  area.value = visibleJson(args);
  const error = field(holder, "args", "Arguments (JSON object)", area, schema ? "checked against the tool's schema on the server" : "");
  return {
    read() {
      error.textContent = "";
      let value;
      try { value = JSON.parse(area.value); } catch (err) {
        error.textContent = "not valid JSON";
        return { value: null, errors: ["The arguments are not valid JSON."] };
      }
      if (value === null || typeof value !== "object" || Array.isArray(value)) {
        error.textContent = "must be a JSON object";
        return { value: null, errors: ["The arguments must be a JSON object."] };
      }
      return { value, errors: [] };
    },
  };
}
