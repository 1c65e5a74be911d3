#!/usr/bin/env python3
"""Render chat-template and Jinja-feature expectations with transformers' own chat-template code.

Run with the transformers-check virtual environment (transformers 5.x, jinja2 >= 3.1.6):

    /work/main/bench/model/transformers_check/.venv/bin/python tests/tokenizer/data/chat_templates/generate.py

Writes cases.json and features.json next to this script. Every expected value is produced here by
transformers.utils.chat_template_utils (the same code apply_chat_template uses); nothing is hand-written.
"""
import copy
import json
import os
import sys

import jinja2
import transformers
from transformers.utils.chat_template_utils import (
    _compile_jinja_template,
    _normalize_chat_messages,
    render_jinja_template,
)

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.path.join(HERE, "templates")


def load(name):
    with open(os.path.join(TEMPLATES, name + ".jinja"), encoding="utf-8") as f:
        return f.read()


def render_chat(template, messages, add_generation_prompt, bos_token, eos_token, extra):
    """What tokenizer.apply_chat_template(messages, tokenize=False, ...) does: drop None-valued message keys, pass the
    special tokens (only those that are set) and the extra kwargs, then render_jinja_template."""
    extra = dict(extra or {})
    tools = extra.pop("tools", None)
    documents = extra.pop("documents", None)
    kwargs = {}
    if bos_token is not None:
        kwargs["bos_token"] = bos_token
    if eos_token is not None:
        kwargs["eos_token"] = eos_token
    kwargs.update(extra)
    conv = _normalize_chat_messages(copy.deepcopy(messages))
    rendered, _ = render_jinja_template(
        conversations=[conv],
        tools=tools,
        documents=documents,
        chat_template=template,
        add_generation_prompt=add_generation_prompt,
        **kwargs,
    )
    return rendered[0]


# --------------------------------------------------------------------------------------------------------------------
# Conversations
# --------------------------------------------------------------------------------------------------------------------
U1 = [{"role": "user", "content": "Hello"}]
SYS_U = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "What is 2+2?"}]
MULTI = [
    {"role": "user", "content": "Hi there"},
    {"role": "assistant", "content": "Hello! How can I help?"},
    {"role": "user", "content": "Tell me a joke."},
]
SYS_MULTI = [{"role": "system", "content": "Be brief."}] + MULTI
UNICODE = [
    {"role": "user", "content": "  héllo 世界 👋\n\n"},
    {"role": "assistant", "content": "\n  Bonjour ! ça va ? \t\n"},
    {"role": "user", "content": "Ünïcödé: «quotes» \"double\" 'single' \\backslash\n\tend  "},
]
ASSIST_LAST = [
    {"role": "user", "content": "Ping"},
    {"role": "assistant", "content": "Pong"},
]
NOT_ALTERNATING = [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]
ASSISTANT_FIRST = [{"role": "assistant", "content": "I start"}, {"role": "user", "content": "ok"}]
UNKNOWN_ROLE = [{"role": "user", "content": "hi"}, {"role": "narrator", "content": "meanwhile"}]

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather ☀️ in a city — e.g. Zürich",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "options": {
                    "type": "object",
                    "properties": {"days": {"type": "integer", "minimum": 1}, "hourly": {"type": "boolean"}},
                },
            },
            "required": ["city"],
        },
    },
}
TOOL_ARGS = {"city": "Zürich", "unit": "celsius", "options": {"days": 2, "hourly": False}}
TOOL_CONV = [
    {"role": "system", "content": "You can call tools."},
    {"role": "user", "content": "What's the weather in Zürich?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": TOOL_ARGS}}],
    },
    {"role": "tool", "name": "get_weather", "content": "{\"temperature\": 21.5, \"sky\": \"clear ☀️\"}"},
    {"role": "assistant", "content": "It is 21.5 °C and clear."},
    {"role": "user", "content": "Thanks!"},
]
# Llama 3.x renders the tool call turn, then the ipython turn; no system message -> tools go in the first user message
LLAMA_TOOL_CONV = [
    {"role": "user", "content": "What's the weather in Zürich?"},
    {
        "role": "assistant",
        "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": TOOL_ARGS}}],
    },
    {"role": "tool", "content": "{\"temperature\": 21.5}"},
]
MISTRAL_TOOL_CONV = [
    {"role": "user", "content": "What's the weather in Zürich?"},
    {
        "role": "assistant",
        "tool_calls": [
            {"id": "abc123def", "type": "function", "function": {"name": "get_weather", "arguments": TOOL_ARGS}}
        ],
    },
    {"role": "tool", "tool_call_id": "abc123def", "content": "{\"temperature\": 21.5}"},
    {"role": "assistant", "content": "21.5 °C."},
    {"role": "user", "content": "And tomorrow?"},
]
QWEN3_THINK = [
    {"role": "user", "content": "What is 1+1?"},
    {"role": "assistant", "content": "2", "reasoning_content": "Simple arithmetic: one plus one."},
    {"role": "user", "content": "And 2+2?"},
    {"role": "assistant", "content": "<think>\nAdd two and two.\n</think>\n\n4"},
]
QWEN3_THINK_IN_CONTENT = [
    {"role": "user", "content": "Why is the sky blue?"},
    {"role": "assistant", "content": "<think>\nRayleigh scattering.\n</think>\n\nBecause of Rayleigh scattering."},
    {"role": "user", "content": "Thanks 👍"},
]
R1_CONV = [
    {"role": "system", "content": "You are DeepSeek."},
    {"role": "user", "content": "2+3?"},
    {"role": "assistant", "content": "<think>\nadd\n</think>\n\n5"},
    {"role": "user", "content": "héllo 世界 👋"},
]

LLAMA3 = ("<|begin_of_text|>", "<|eot_id|>")
MISTRAL = ("<s>", "</s>")
GEMMA = ("<bos>", "<eos>")
PHI3 = ("<s>", "<|endoftext|>")
QWEN = (None, "<|im_end|>")  # Qwen tokenizers have no bos_token: apply_chat_template does not pass one
SMOL = ("<|im_start|>", "<|im_end|>")
R1 = ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>")
DATE = {"date_string": "26 Jul 2024"}

# (template, tokens, [(case name, messages, add_generation_prompt, extra, flags)])
BASIC = [
    ("single_user", U1, True, {}),
    ("system_user", SYS_U, True, {}),
    ("multi_turn_no_gen", MULTI, False, {}),
    ("multi_turn_gen", MULTI, True, {}),
    ("unicode_whitespace", UNICODE, True, {}),
    ("assistant_last_no_gen", ASSIST_LAST, False, {}),
]
NO_SYS_BASIC = [c for c in BASIC if c[0] != "system_user"]
ALT = [("not_alternating", NOT_ALTERNATING, True, {}), ("assistant_first", ASSISTANT_FIRST, True, {})]

SPECS = {
    "llama-3-8b-instruct": (LLAMA3, BASIC + [("system_multi", SYS_MULTI, True, {})]),
    "llama-3.1-8b-instruct": (
        LLAMA3,
        BASIC
        + [
            ("system_multi_date", SYS_MULTI, True, {"date_string": "01 Jan 2025"}),
            ("tools_in_user_message", LLAMA_TOOL_CONV, True, {"tools": [TOOL]}),
            ("tools_in_system", [{"role": "system", "content": "Sys"}] + LLAMA_TOOL_CONV, True,
             {"tools": [TOOL], "tools_in_user_message": False}),
            ("builtin_tools", [{"role": "user", "content": "Search the web"}], True,
             {"builtin_tools": ["brave_search", "wolfram_alpha", "code_interpreter"]}),
            ("two_tool_calls_error", [
                {"role": "user", "content": "x"},
                {"role": "assistant", "tool_calls": [
                    {"type": "function", "function": {"name": "a", "arguments": {}}},
                    {"type": "function", "function": {"name": "b", "arguments": {}}}]}], False, {"tools": [TOOL]}),
            ("tools_no_messages_error", [], True, {"tools": [TOOL]}),
        ],
    ),
    "llama-3.2-3b-instruct": (
        LLAMA3,
        [(n, m, g, dict(DATE, **e)) for (n, m, g, e) in BASIC]
        + [
            ("tools_in_user_message", LLAMA_TOOL_CONV, True, dict(DATE, tools=[TOOL])),
            ("today_date_from_strftime_now", U1, True, {"__depends_on_date__": True}),
        ],
    ),
    "qwen2.5-7b-instruct": (
        QWEN,
        BASIC
        + [
            ("tools", TOOL_CONV, True, {"tools": [TOOL]}),
            ("tools_no_system", TOOL_CONV[1:4], True, {"tools": [TOOL]}),
            ("two_tool_messages", [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "calling", "tool_calls": [
                    {"type": "function", "function": {"name": "f", "arguments": {"x": 1}}},
                    {"type": "function", "function": {"name": "g", "arguments": {"y": [1, 2]}}}]},
                {"role": "tool", "content": "r1"}, {"role": "tool", "content": "r2"}], True, {"tools": [TOOL]}),
        ],
    ),
    "qwen3-0.6b": (
        QWEN,
        BASIC
        + [
            ("enable_thinking_false", U1, True, {"enable_thinking": False}),
            ("enable_thinking_true", U1, True, {"enable_thinking": True}),
            ("reasoning_content_history", QWEN3_THINK, False, {}),
            ("think_in_content_then_user", QWEN3_THINK_IN_CONTENT, True, {"enable_thinking": False}),
            ("tools", TOOL_CONV, True, {"tools": [TOOL]}),
            ("tool_response_wrapped_user", [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
                {"role": "tool", "content": "ok"}], True, {"tools": [TOOL]}),
        ],
    ),
    "mistral-7b-instruct-v0.1": (MISTRAL, NO_SYS_BASIC + ALT + [("system_error", SYS_U, True, {})]),
    "mistral-7b-instruct-v0.2-v1": (
        MISTRAL,
        BASIC + ALT + [("system_multi", SYS_MULTI, False, {}), ("unknown_role", UNKNOWN_ROLE, True, {})],
    ),
    "mistral-nemo-instruct-2407": (
        MISTRAL,
        BASIC + ALT + [("system_multi", SYS_MULTI, False, {}), ("tools", MISTRAL_TOOL_CONV, False, {"tools": [TOOL]}),
                       ("bad_tool_call_id", [
                           {"role": "user", "content": "q"},
                           {"role": "assistant", "tool_calls": [
                               {"id": "short", "type": "function", "function": {"name": "f", "arguments": {}}}]}],
                        False, {})],
    ),
    "gemma-7b-it": (GEMMA, NO_SYS_BASIC + ALT + [("system_error", SYS_U, True, {})]),
    "gemma-2-2b-it": (GEMMA, NO_SYS_BASIC + ALT + [("system_error", SYS_U, True, {})]),
    "phi-3-mini-instruct": (PHI3, BASIC),
    "phi-3.5-mini-instruct": (
        PHI3,
        BASIC + [("empty_system_skipped", [{"role": "system", "content": ""}] + U1, True, {})],
    ),
    "zephyr-7b-beta": (MISTRAL, BASIC + [("system_multi", SYS_MULTI, True, {})]),
    "smollm2-instruct": (SMOL, BASIC + [("system_multi", SYS_MULTI, True, {})]),
    "deepseek-r1-distill-qwen-32b": (
        R1,
        BASIC
        + [
            ("think_stripped", R1_CONV, True, {}),
            ("tool_calls_and_outputs", [
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Zürich\"}"}}]},
                {"role": "tool", "content": "21.5"},
                {"role": "tool", "content": "sunny"},
            ], True, {}),
        ],
    ),
}


def make_cases():
    cases = []
    for name, ((bos, eos), items) in SPECS.items():
        template = load(name)
        for case_name, messages, agp, extra in items:
            extra = dict(extra)
            depends = extra.pop("__depends_on_date__", False)
            case = {
                "template": name,
                "name": case_name,
                "messages": messages,
                "add_generation_prompt": agp,
                "bos_token": bos,
                "eos_token": eos,
                "extra": extra,
            }
            if depends:
                case["depends_on_date"] = True
            try:
                case["expected"] = render_chat(template, messages, agp, bos, eos, extra)
            except Exception as e:  # noqa: BLE001 - the template's own refusals are the expectation
                case["error"] = str(e)
                case["error_type"] = type(e).__name__
            cases.append(case)
    return cases


# --------------------------------------------------------------------------------------------------------------------
# Jinja language features, rendered by the same compiled-template path (_compile_jinja_template -> .render)
# --------------------------------------------------------------------------------------------------------------------
M = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "yo", "tool_calls": [{"function": {"name": "f"}}]},
]
PEOPLE = [{"name": "bob", "age": 30, "ok": True}, {"name": "alice", "age": 25, "ok": False},
          {"name": "carol", "age": 35, "ok": True}]

FEATURES = [
    # output of values
    ("text_only", "plain text", {}),
    ("print_string", "{{ 'abc' }}", {}),
    ("print_int", "{{ 42 }}|{{ -7 }}", {}),
    ("print_float", "{{ 1.0 }}|{{ 2.5 }}|{{ 1e20 }}|{{ -0.0 }}|{{ 0.1 + 0.2 }}|{{ 1e-7 }}|{{ 3.14159 }}", {}),
    ("print_float_from_context", "{{ x }}|{{ y }}|{{ z }}", {"x": 1.0, "y": 123456789.125, "z": 1e16}),
    ("print_bool", "{{ true }}|{{ false }}|{{ True }}|{{ False }}", {}),
    ("print_none", "{{ none }}|{{ None }}|{{ x }}", {"x": None}),
    ("print_list", "{{ ['a', 1, 2.5, true, none] }}", {}),
    ("print_dict", "{{ {'a': 1, 'b': 'x'} }}", {}),
    ("print_nested_context", "{{ m }}", {"m": {"role": "user", "content": "it's \"q\"", "n": [1, {"k": None}]}}),
    ("print_string_with_quote_in_list", "{{ [\"it's\", 'a\"b'] }}", {}),
    ("print_undefined", "[{{ nothing }}]", {}),
    ("print_tuple", "{{ (1, 'a') }}", {}),
    # whitespace control
    ("ws_minus_both", "a  {%- if true -%}  b  {%- endif -%}  c", {}),
    ("ws_expr_minus", "a \n {{- 'b' -}} \n c", {}),
    ("ws_expr_no_trim", "a \n {{ 'b' }} \n c", {}),
    ("trim_blocks_newline", "{% if true %}\nX\n{% endif %}\nY", {}),
    ("lstrip_blocks_indent", "A\n    {% if true %}\n    B\n    {% endif %}\nC", {}),
    ("lstrip_not_for_expr", "A\n    {{ 'B' }}\nC", {}),
    ("lstrip_plus_disables", "A\n    {%+ if true %}B{% endif %}\nC", {}),
    ("trim_blocks_only_one_newline", "{% if true %}\n\nX{% endif %}", {}),
    ("comment", "a{# comment #}b", {}),
    ("comment_minus", "a  {#- c -#}  b", {}),
    ("comment_trim_blocks", "a\n  {# c #}\nb", {}),
    ("raw_block", "{% raw %}{{ not rendered }}{% endraw %}", {}),
    # string literals
    ("str_escape_newline", "{{ 'a\\nb' }}", {}),
    ("str_escape_quote", "{{ \"say \\\"hi\\\"\" }}|{{ 'it\\'s' }}", {}),
    ("str_escape_tab_backslash", "{{ 'a\\tb' }}|{{ 'c\\\\d' }}", {}),
    ("str_unicode_literal", "{{ 'héllo 世界 👋' }}|{{ '｜▁' }}", {}),
    ("str_unicode_escape", "{{ '\\u00e9' }}", {}),
    ("str_real_newline_in_literal", "{{ 'line1\nline2' }}", {}),
    # arithmetic
    ("arith_int", "{{ 1 + 2 }}|{{ 7 - 10 }}|{{ 6 * 7 }}|{{ 2 ** 10 }}", {}),
    ("arith_div", "{{ 7 / 2 }}|{{ 4 / 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}", {}),
    ("arith_float", "{{ 1.5 + 1 }}|{{ 2.5 * 2 }}|{{ 7.5 // 2 }}|{{ 2 ** 0.5 }}|{{ 10 / 4 }}", {}),
    ("arith_precedence", "{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ -2 ** 2 }}|{{ 2 ** 3 ** 2 }}", {}),
    ("unary_minus_plus", "{{ -x }}|{{ +x }}|{{ - - 3 }}", {"x": 5}),
    ("string_concat", "{{ 'a' + 'b' }}|{{ 'n=' ~ 5 }}|{{ 1 ~ 2 }}|{{ none ~ 'x' }}|{{ 'x' ~ nothing ~ 'y' }}", {}),
    ("string_times_int", "{{ 'ab' * 3 }}|{{ '-' * 0 }}", {}),
    ("list_concat", "{{ [1, 2] + [3] }}|{{ ([1] + []) | length }}", {}),
    ("add_str_int_error", "{{ 'a' + 1 }}", {}),
    ("div_by_zero_error", "{{ 1 / 0 }}", {}),
    # comparisons, logic
    ("compare", "{{ 1 < 2 }}|{{ 2 <= 1 }}|{{ 'a' == 'a' }}|{{ 'a' != 'b' }}|{{ 1 == 1.0 }}|{{ 'b' > 'a' }}", {}),
    ("compare_chained", "{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}", {}),
    ("and_or_return_operands", "{{ '' or 'x' }}|{{ 0 and 1 }}|{{ 'a' and 'b' }}|{{ none or 0 }}|{{ [] or 'empty' }}", {}),
    ("not", "{{ not true }}|{{ not '' }}|{{ not [1] }}|{{ not nothing }}", {}),
    ("in_operator", "{{ 'b' in 'abc' }}|{{ 2 in [1, 2] }}|{{ 'k' in {'k': 1} }}|{{ 'z' not in 'abc' }}|{{ 'x' not in {'x': 1} }}", {}),
    ("key_in_message", "{{ 'tool_calls' in m }}|{{ 'content' in m }}", {"m": {"role": "user", "content": "x"}}),
    ("truthiness", "{% for v in [0, 1, '', 'a', [], [0], {}, none, 0.0] %}{{ 'T' if v else 'F' }}{% endfor %}", {}),
    # conditional expression
    ("cond_expr", "{{ 'yes' if 1 < 2 else 'no' }}|{{ 'yes' if false else 'no' }}", {}),
    ("cond_expr_no_else", "[{{ 'yes' if false }}][{{ 'yes' if true }}]", {}),
    ("cond_expr_nested", "{{ 'a' if false else 'b' if false else 'c' }}", {}),
    # subscripts, slices, attributes
    ("subscript_list", "{{ l[0] }}|{{ l[-1] }}|{{ l[1:] }}|{{ l[:-1] }}|{{ l[::-1] }}|{{ l[::2] }}|{{ l[1:3] }}", {"l": [1, 2, 3, 4]}),
    ("subscript_string", "{{ s[0] }}|{{ s[-1] }}|{{ s[1:] }}|{{ s[:-1] }}|{{ s[::-1] }}", {"s": "héllo"}),
    ("subscript_out_of_range_undefined", "[{{ l[10] }}]", {"l": [1]}),
    ("attr_on_dict", "{{ m.role }}|{{ m['content'] }}|{{ m.get('role') }}", {"m": {"role": "user", "content": "x"}}),
    ("missing_key_defined", "{{ m.tool_calls is defined }}|{{ m.role is defined }}|[{{ m.nothing }}]|{{ m['x'] is defined }}", {"m": {"role": "u"}}),
    ("attr_of_undefined_error", "{{ nothing.attr }}", {}),
    ("nested_attr", "{{ m[2].tool_calls[0].function.name }}", {"m": M}),
    ("dict_key_shadowed_by_method", "{{ d['items'] }}|{{ d.items is callable }}|{{ d.get('items') }}", {"d": {"items": 5}}),
    # tests
    ("test_defined", "{{ x is defined }}|{{ y is defined }}|{{ y is undefined }}|{{ x is not defined }}", {"x": 1}),
    ("test_none", "{{ x is none }}|{{ x is not none }}|{{ 0 is none }}", {"x": None}),
    ("test_types", "{{ 'a' is string }}|{{ 1 is number }}|{{ 1.5 is number }}|{{ true is number }}|{{ 'a' is number }}|{{ 1 is integer }}|{{ 1.0 is float }}", {}),
    ("test_mapping_sequence_iterable", "{{ {} is mapping }}|{{ [] is mapping }}|{{ [] is sequence }}|{{ 'ab' is sequence }}|{{ {} is sequence }}|{{ 'x' is iterable }}|{{ 1 is iterable }}|{{ {} is iterable }}", {}),
    ("test_boolean", "{{ true is boolean }}|{{ 1 is boolean }}|{{ true is true }}|{{ 1 is true }}|{{ false is false }}|{{ 0 is false }}", {}),
    ("test_odd_even_divisible", "{{ 3 is odd }}|{{ 3 is even }}|{{ 9 is divisibleby(3) }}|{{ 10 is divisibleby 3 }}", {}),
    ("test_equalto", "{{ 1 is equalto(1) }}|{{ 'a' is eq 'b' }}|{{ 2 is ne(3) }}|{{ 3 is gt(2) }}|{{ 3 is lt 2 }}|{{ 3 is ge 3 }}", {}),
    ("test_in", "{{ 2 is in([1, 2]) }}|{{ 'x' is in 'abc' }}", {}),
    ("test_callable_lower_upper", "{{ raise_exception is callable }}|{{ 'abc' is lower }}|{{ 'ABC' is upper }}", {}),
    # for loops
    ("for_list", "{% for x in [1, 2, 3] %}{{ x }},{% endfor %}", {}),
    ("for_string", "{% for c in 'héy' %}[{{ c }}]{% endfor %}", {}),
    ("for_dict_keys", "{% for k in d %}{{ k }};{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for_items_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"b": 1, "a": [2]}}),
    ("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }} {% endfor %}", {}),
    ("for_previtem_nextitem", "{% for x in [1, 2, 3] %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}", {}),
    ("for_previtem_defined", "{% for x in [1, 2] %}{{ loop.previtem is defined }}{% endfor %}", {}),
    ("for_cycle", "{% for x in range(5) %}{{ loop.cycle('a', 'b') }}{% endfor %}", {}),
    ("for_changed", "{% for x in [1, 1, 2, 2, 3] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}", {}),
    ("for_else", "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}|{% for x in [1] %}{{ x }}{% else %}empty{% endfor %}", {}),
    ("for_if_filter", "{% for m in msgs if m.role != 'system' %}{{ loop.index }}:{{ m.role }}{{ loop.length }};{% endfor %}", {"msgs": M}),
    ("for_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("for_nested_outer_loop", "{% for a in [1, 2] %}{% set outer = loop %}{% for b in 'xy' %}{{ outer.index }}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{% endfor %}", {}),
    ("for_unpack_list_of_lists", "{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }};{% endfor %}", {}),
    ("for_over_none_error", "{% for x in none %}{% endfor %}", {}),
    ("for_over_undefined_empty", "{% for x in nothing %}x{% else %}none{% endfor %}", {}),
    ("for_recursive", "{% for i in t recursive %}{{ i.n }}{% if i.c %}({{ loop(i.c) }}){% endif %}{% endfor %}", {"t": [{"n": 1, "c": [{"n": 2, "c": []}]}, {"n": 3, "c": []}]}),
    # set and scoping
    ("set_simple", "{% set x = 5 %}{{ x }}{% set x = x + 1 %}{{ x }}", {}),
    ("set_in_for_does_not_leak", "{% set found = false %}{% for m in msgs %}{% if m.role == 'user' %}{% set found = true %}{% endif %}{% endfor %}{{ found }}", {"msgs": M}),
    ("set_in_if_leaks", "{% if true %}{% set x = 1 %}{% endif %}{{ x }}", {}),
    ("namespace", "{% set ns = namespace(a=1, b='x') %}{% for i in range(3) %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }}{{ ns.b }}", {}),
    ("namespace_empty_then_set", "{% set ns = namespace() %}{% set ns.idx = 0 %}{% set ns.idx = ns.idx + 2 %}{{ ns.idx }}", {}),
    ("namespace_print", "{{ namespace(a=1) }}", {}),
    ("set_block", "{% set x %}hello {{ 'world' }}{% endset %}[{{ x }}]", {}),
    ("set_block_filter", "{% set x | upper %}abc{% endset %}{{ x }}", {}),
    ("set_tuple_unpack", "{% set a, b = [1, 2] %}{{ b }}{{ a }}", {}),
    ("set_overrides_context_var", "{% set messages = messages[1:] %}{{ messages | length }}", {"messages": M}),
    ("set_loop_var_in_for", "{% for tc in calls %}{% set tc = tc.function %}{{ tc.name }}{% endfor %}", {"calls": [{"function": {"name": "f"}}, {"function": {"name": "g"}}]}),
    # if
    ("if_elif_else", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %} {% endfor %}", {}),
    ("if_undefined_false", "{% if nothing %}T{% else %}F{% endif %}", {}),
    # macros
    ("macro_defaults", "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Bob') }} {{ greet('Al', greeting='Hi') }} {{ greet('X', 'Yo') }}", {}),
    ("macro_outer_scope", "{% set p = '>' %}{% macro m(x) %}{{ p }}{{ x }}{% endmacro %}{{ m(1) }}", {}),
    ("macro_caller", "{% macro wrap() %}[{{ caller() }}]{% endmacro %}{% call wrap() %}inner{% endcall %}", {}),
    ("macro_whitespace", "{% macro f(x) %}\n  {{ x }}\n{% endmacro %}<{{ f(1) }}>", {}),
    # filters
    ("filter_trim", "[{{ '  a b \\n' | trim }}][{{ 'xxaxx' | trim('x') }}]", {}),
    ("filter_length_count", "{{ [1, 2] | length }}|{{ 'héllo' | length }}|{{ {'a': 1} | length }}|{{ [1] | count }}", {}),
    ("filter_tojson_basic", "{{ d | tojson }}", {"d": {"b": [1, 2.5, True, None], "a": "héllo 世界 \"q\" </tag>", "c": {"n": -0.0}}}),
    ("filter_tojson_indent2", "{{ d | tojson(indent=2) }}", {"d": {"name": "f", "params": {"x": [1, {"y": "ü"}]}, "e": [], "o": {}}}),
    ("filter_tojson_indent4", "{{ d | tojson(indent=4) }}", {"d": {"name": "f", "params": {"x": [1, {"y": "ü"}]}}}),
    ("filter_tojson_scalars", "{{ true | tojson }}|{{ none | tojson }}|{{ 1.0 | tojson }}|{{ 1e20 | tojson }}|{{ 'a\\nb' | tojson }}|{{ 3 | tojson }}", {}),
    ("filter_tojson_sort_keys_separators", "{{ d | tojson(sort_keys=true) }}|{{ d | tojson(separators=(',', ':')) }}", {"d": {"b": 1, "a": [1, 2]}}),
    ("filter_tojson_ensure_ascii", "{{ 'é' | tojson(ensure_ascii=true) }}", {}),
    ("filter_join", "{{ ['a', 'b', 'c'] | join }}|{{ ['a', 'b'] | join(', ') }}|{{ [1, 2] | join('-') }}|{{ people | join(', ', attribute='name') }}", {"people": PEOPLE}),
    ("filter_list", "{{ 'abc' | list }}|{{ {'a': 1} | list }}", {}),
    ("filter_first_last", "{{ [1, 2, 3] | first }}|{{ [1, 2, 3] | last }}|{{ 'abc' | first }}", {}),
    ("filter_case", "{{ 'hello WORLD' | upper }}|{{ 'Hello' | lower }}|{{ 'hello WORLD' | capitalize }}|{{ 'hello wORLD foo-bar' | title }}", {}),
    ("filter_replace", "{{ 'aXbXc' | replace('X', '-') }}|{{ 'aaa' | replace('a', 'b', 2) }}", {}),
    ("filter_default", "{{ nothing | default('dflt') }}|{{ '' | default('dflt') }}|{{ '' | default('dflt', true) }}|{{ none | d('n') }}|{{ x | default('dflt') }}", {"x": 0}),
    ("filter_selectattr", "{{ people | selectattr('ok') | map(attribute='name') | join(',') }}|{{ people | selectattr('name', 'equalto', 'bob') | list | length }}", {"people": PEOPLE}),
    ("filter_rejectattr", "{{ people | rejectattr('ok') | map(attribute='name') | list }}|{{ msgs | rejectattr('role', 'equalto', 'system') | list | length }}", {"people": PEOPLE, "msgs": M}),
    ("filter_selectattr_defined", "{{ msgs | selectattr('tool_calls', 'defined') | list | length }}", {"msgs": M}),
    ("filter_select_reject", "{{ [1, 2, 3, 4] | select('odd') | list }}|{{ [1, 2, 3, 4] | reject('odd') | list }}|{{ [0, 1, '', 'a'] | select | list }}|{{ ['a', 'code_interpreter'] | reject('equalto', 'code_interpreter') | list }}", {}),
    ("filter_map", "{{ people | map(attribute='age') | list }}|{{ ['a', 'b'] | map('upper') | join }}|{{ people | map(attribute='x', default='?') | join }}", {"people": PEOPLE}),
    ("filter_items", "{% for k, v in d | items %}{{ k }}{{ v }}{% endfor %}", {"d": {"x": 1, "y": 2}}),
    ("filter_string", "{{ 3 | string }}|{{ [1, 'a'] | string }}|{{ none | string }}|{{ (1 | string) + 'x' }}", {}),
    ("filter_int_float", "{{ '42' | int }}|{{ 3.9 | int }}|{{ 'x' | int }}|{{ '2.5' | float }}|{{ 3 | float }}|{{ 'x' | int(7) }}", {}),
    ("filter_abs_round", "{{ -3 | abs }}|{{ 2.567 | round(2) }}|{{ 2.5 | round }}|{{ 2.4 | round(0, 'ceil') }}|{{ 2.6 | round(method='floor') }}", {}),
    ("filter_unique", "{{ [3, 1, 3, 2, 1] | unique | list }}|{{ ['a', 'A', 'b'] | unique | list }}", {}),
    ("filter_sort", "{{ [3, 1, 2] | sort }}|{{ [3, 1, 2] | sort(reverse=true) }}|{{ people | sort(attribute='age') | map(attribute='name') | join(',') }}|{{ ['b', 'A', 'c'] | sort }}", {"people": PEOPLE}),
    ("filter_reverse", "{{ [1, 2, 3] | reverse | list }}|{{ 'abc' | reverse }}", {}),
    ("filter_dictsort", "{% for k, v in d | dictsort %}{{ k }}{{ v }}{% endfor %}", {"d": {"b": 1, "a": 2, "C": 3}}),
    ("filter_sum_min_max", "{{ [1, 2, 3] | sum }}|{{ [1.5, 2] | sum }}|{{ [3, 1, 2] | min }}|{{ [3, 1, 2] | max }}|{{ people | sum(attribute='age') }}", {"people": PEOPLE}),
    ("filter_batch", "{{ [1, 2, 3, 4, 5] | batch(2) | list }}", {}),
    ("filter_indent", "[{{ 'a\\nb\\n\\nc' | indent(2) }}][{{ 'a\\nb' | indent(2, true) }}]", {}),
    ("filter_wordcount", "{{ 'one two  three' | wordcount }}", {}),
    ("filter_safe_escape", "{{ '<b>&' | safe }}|{{ '<b>&\"' | e }}|{{ '<x>' | escape }}", {}),
    ("filter_center_truncate", "[{{ 'ab' | center(6) }}]|{{ 'hello world foo' | truncate(9) }}", {}),
    ("filter_format", "{{ '%s-%d' | format('a', 3) }}", {}),
    ("filter_chain_precedence", "{{ 'a' + 'b' | upper }}|{{ -1 | abs }}|{{ ('a' + 'b') | upper }}", {}),
    ("filter_undefined_error", "{{ 'x' | nosuchfilter }}", {}),
    # string methods
    ("str_strip", "[{{ '  a  '.strip() }}][{{ '  a  '.lstrip() }}][{{ '  a  '.rstrip() }}][{{ 'xxaxx'.strip('x') }}][{{ '\\n\\nab\\n'.lstrip('\\n') }}][{{ 'ab\\n\\n'.rstrip('\\n') }}]", {}),
    ("str_split", "{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'x</think>y'.split('</think>')[-1] }}", {}),
    ("str_startswith_endswith", "{{ 'hello'.startswith('he') }}|{{ 'hello'.endswith('lo') }}|{{ 'hello'.startswith(('x', 'h')) }}|{{ 'hello'.endswith('x') }}", {}),
    ("str_case_methods", "{{ 'aB'.upper() }}|{{ 'aB'.lower() }}|{{ 'hello world'.title() }}|{{ 'hELLO'.capitalize() }}|{{ 'aB'.swapcase() }}", {}),
    ("str_replace_find_count", "{{ 'a-b-c'.replace('-', '+') }}|{{ 'abcabc'.find('c') }}|{{ 'abc'.find('z') }}|{{ 'abcabc'.count('bc') }}|{{ 'abc'.index('b') }}", {}),
    ("str_format_method", "{{ '{} and {}'.format('a', 1) }}|{{ '{x}!'.format(x='y') }}", {}),
    ("str_join_method", "{{ ', '.join(['a', 'b']) }}", {}),
    ("str_is_methods", "{{ '123'.isdigit() }}|{{ 'abc'.isalpha() }}|{{ '  '.isspace() }}|{{ 'Ab'.islower() }}", {}),
    ("str_partition_splitlines", "{{ 'a=b=c'.partition('=') }}|{{ 'a\\nb\\r\\nc'.splitlines() }}", {}),
    ("str_zfill_center_ljust", "{{ '7'.zfill(3) }}|[{{ 'a'.ljust(3) }}]|[{{ 'a'.rjust(3, '*') }}]", {}),
    # dict methods
    ("dict_methods", "{{ d.keys() | list }}|{{ d.values() | list }}|{{ d.items() | list }}|{{ d.get('a') }}|{{ d.get('z') }}|{{ d.get('z', 'dflt') }}", {"d": {"a": 1, "b": [2]}}),
    ("dict_constructor_global", "{{ dict(a=1, b=2) }}", {}),
    ("dict_literal_access", "{{ {'x': {'y': 3}}['x'].y }}", {}),
    ("list_methods_immutable_error", "{% set l = [1] %}{{ l.append(2) }}", {}),
    ("list_index_count_methods", "{{ [1, 2, 2].count(2) }}|{{ ['a', 'b'].index('b') }}", {}),
    # range
    ("range", "{{ range(3) | list }}|{{ range(1, 4) | list }}|{{ range(0, 10, 3) | list }}|{{ range(3, 0, -1) | list }}", {}),
    ("range_print", "{{ range(3) }}", {}),
    # globals / errors
    ("raise_exception", "before{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}", {}),
    ("strftime_now_is_defined", "{{ strftime_now is defined }}|{{ strftime_now('%Y') | length }}", {}),
    ("undefined_function_error", "{{ nosuchfunc() }}", {}),
    ("syntax_unclosed_block", "{% if true %}x", {}),
    ("syntax_endif_without_if", "x{% endif %}", {}),
    ("syntax_unclosed_expression", "{{ 'a' ", {}),
    ("syntax_unknown_tag", "{% foo %}", {}),
    ("undefined_attr_call_error", "{{ 'abc'.nosuchmethod() }}", {}),
    ("sandbox_dunder_attr_is_undefined", "{{ ''.__class__ }}", {}),
    ("namespace_underscore_error", "{% set ns = namespace() %}{% set ns._x = 1 %}", {}),
    # transformers extensions
    ("generation_block", "A{% generation %}B{{ 1 + 1 }}{% endgeneration %}C", {}),
    ("generation_block_trimmed", "{%- generation -%}\n  X\n{%- endgeneration -%}\n", {}),
    # whole-template realistic mini cases
    ("messages_loop_realistic", "{%- for message in messages %}\n    {{- '<|im_start|>' + message.role + '\\n' + message.content | trim + '<|im_end|>\\n' }}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}\n", {"messages": [{"role": "user", "content": "  hi  "}], "add_generation_prompt": True}),
    ("loop_index0_messages_lookup", "{% for m in msgs %}{% if loop.index0 > 0 and msgs[loop.index0 - 1].role == 'system' %}after-sys:{{ m.role }}{% endif %}{% endfor %}", {"msgs": M}),
    ("filter_on_trim_precedence", "{{ '<a>' + ' x ' | trim + '</a>' }}", {}),
    ("is_not_and_not_in", "{{ x is not string }}|{{ not x is string }}|{{ 'a' not in x }}", {"x": ["a"]}),
    ("string_iteration_is_iterable_content", "{{ c is iterable }}|{{ c is mapping }}|{{ c | tojson }}", {"c": "{\"t\": 1}"}),
    ("dict_equality", "{% set users = msgs | selectattr('role', 'equalto', 'user') | list %}{% for m in msgs %}{{ m == users[-1] }}{% endfor %}|{{ {'a': 1} == {'a': 1} }}|{{ [1, 2] == [1, 2] }}", {"msgs": M}),
    ("not_call_form", "{{ not('a'.startswith('a') and 'b'.endswith('x')) }}|{{ not (1 == 1) }}", {}),
    ("filter_binds_tighter_than_compare", "{{ 'abcdefghi' | length != 9 }}|{{ not x | length == 1 }}|{{ 1 + x | length }}", {"x": [5]}),
    ("not_is_precedence", "{{ not x is none }}|{{ not x is defined }}|{{ not tools is none }}", {"x": 1, "tools": None}),
    ("concat_then_filter", "{{ '\\n' + '```json' + d | tojson + '\\n' }}", {"d": {"k": 1}}),
    ("for_items_if_with_loop_last", "{% for key, val in d.items() if key != 'return' %}{{ key }}{% if not loop.last %}, {% endif %}{% endfor %}", {"d": {"name": "f", "return": "x", "description": "d"}}),
    ("int_float_equality_print", "{{ 3 == 3.0 }}|{{ 3 / 1 }}|{{ 2 * 1.0 }}|{{ 10 // 2.0 }}", {}),
]


def make_features():
    out = []
    seen = set()
    for name, template, context in FEATURES:
        assert name not in seen, name
        seen.add(name)
        case = {"name": name, "template": template, "context": context}
        try:
            compiled = _compile_jinja_template(template)
            case["expected"] = compiled.render(**copy.deepcopy(context))
        except Exception as e:  # noqa: BLE001
            case["error"] = str(e)
            case["error_type"] = type(e).__name__
        if name == "strftime_now_is_defined":
            case["note"] = "strftime_now('%Y') prints the current year; only its length (4) is checked"
        out.append(case)
    return out


def dump(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")


def main():
    cases = make_cases()
    features = make_features()
    dump(os.path.join(HERE, "cases.json"), cases)
    dump(os.path.join(HERE, "features.json"), features)
    print(f"transformers {transformers.__version__}, jinja2 {jinja2.__version__}")
    print(f"cases.json: {len(cases)} cases ({sum('error' in c for c in cases)} errors) over {len(SPECS)} templates")
    print(f"features.json: {len(features)} cases ({sum('error' in c for c in features)} errors)")


if __name__ == "__main__":
    sys.exit(main())
