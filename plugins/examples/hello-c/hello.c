/*
 * hello.c - the example C plugin: one tool, `hello`, against hearth.h alone.
 *
 * It shows the whole ABI from C: the exported header, init with a state,
 * describe, invoke with a result written through the host's sink, logging
 * through the host, and shutdown freeing what init allocated.
 */
#include <stdlib.h>
#include <string.h>

#include "hearth.h"

typedef struct HelloState {
    const HearthHostApi *host;
    unsigned long calls;
} HelloState;

static void say(const HearthHostApi *host, uint32_t level, const char *msg) {
    HearthStr target = HEARTH_STR("hello-c");
    HearthStr text = {(const uint8_t *)msg, strlen(msg)};
    if (host->log != NULL) {
        host->log(host->ctx, level, target, text);
    }
}

static void put(const HearthHostApi *host, HearthSink *sink, const char *s, size_t len) {
    HearthStr bytes = {(const uint8_t *)s, len};
    host->write_result(sink, bytes);
}

static void put_str(const HearthHostApi *host, HearthSink *sink, const char *s) {
    put(host, sink, s, strlen(s));
}

/* --- a minimal JSON reader: just enough to find a top-level string field --- */

static size_t skip_ws(const uint8_t *s, size_t n, size_t i) {
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) {
        i++;
    }
    return i;
}

/* s[i] is '"'; returns the index just past the closing quote, or 0. */
static size_t skip_string(const uint8_t *s, size_t n, size_t i) {
    for (i++; i < n; i++) {
        if (s[i] == '\\') {
            i++;
        } else if (s[i] == '"') {
            return i + 1;
        }
    }
    return 0;
}

/* Skips any JSON value starting at s[i]; returns the index past it, or 0. */
static size_t skip_value(const uint8_t *s, size_t n, size_t i) {
    int depth = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c == '"') {
            i = skip_string(s, n, i);
            if (i == 0 || depth == 0) {
                return i;
            }
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) {
                return i;
            }
            if (--depth == 0) {
                return i + 1;
            }
        } else if (depth == 0 && c == ',') {
            return i;
        }
        i++;
    }
    return depth == 0 ? i : 0;
}

/* Finds the top-level field `key` of the JSON object in s[0..n]; sets *value
 * to the index where its value starts. Returns 1 when found. */
static int find_field(const uint8_t *s, size_t n, const char *key, size_t *value) {
    size_t klen = strlen(key);
    size_t i = skip_ws(s, n, 0);
    if (i >= n || s[i] != '{') {
        return 0;
    }
    i = skip_ws(s, n, i + 1);
    while (i < n && s[i] == '"') {
        size_t kstart = i + 1;
        size_t kend = skip_string(s, n, i);
        if (kend == 0) {
            return 0;
        }
        i = skip_ws(s, n, kend);
        if (i >= n || s[i] != ':') {
            return 0;
        }
        i = skip_ws(s, n, i + 1);
        if (kend - 1 - kstart == klen && memcmp(s + kstart, key, klen) == 0) {
            *value = i;
            return 1;
        }
        i = skip_value(s, n, i);
        if (i == 0) {
            return 0;
        }
        i = skip_ws(s, n, i);
        if (i < n && s[i] == ',') {
            i = skip_ws(s, n, i + 1);
        }
    }
    return 0;
}

/* --- the ABI entry points --- */

static int32_t hello_init(const HearthHostApi *host, HearthStr config_json, void **state_out,
                          HearthSink *error) {
    (void)config_json;
    HelloState *state = calloc(1, sizeof *state);
    if (state == NULL) {
        put_str(host, error, "out of memory");
        return HEARTH_ERROR;
    }
    state->host = host;
    *state_out = state;
    say(host, HEARTH_LOG_INFO, "hello-c plugin started");
    return HEARTH_OK;
}

static int32_t hello_describe(void *state, HearthSink *out) {
    HelloState *st = state;
    put_str(st->host, out,
            "{\"tools\":[{\"name\":\"hello\","
            "\"description\":\"Greets someone by name. Written in C.\","
            "\"parameters\":{\"type\":\"object\","
            "\"properties\":{\"name\":{\"type\":\"string\"}},"
            "\"required\":[\"name\"]},"
            "\"risk\":\"read\"}],\"channel\":null}");
    return HEARTH_OK;
}

static int32_t hello_invoke(void *state, HearthStr method, HearthStr payload, HearthSink *out) {
    HelloState *st = state;
    const char *tool_call = HEARTH_METHOD_TOOL_CALL;
    if (method.len != strlen(tool_call) || memcmp(method.ptr, tool_call, method.len) != 0) {
        put_str(st->host, out, "hello-c only answers tool.call");
        return HEARTH_UNSUPPORTED;
    }
    /* The payload is {"tool":"hello","args":{"name":"..."}}. The raw bytes
     * between the quotes of a JSON string are valid inside another JSON
     * string, so the name is copied through without decoding. */
    const uint8_t *p = payload.ptr;
    size_t n = payload.len, args = 0, name = 0, end = 0;
    if (!find_field(p, n, "args", &args) ||
        !find_field(p + args, n - args, "name", &name) || p[args + name] != '"' ||
        (end = skip_string(p, n, args + name)) == 0) {
        put_str(st->host, out, "invalid arguments: `name` must be a string");
        return HEARTH_ERROR;
    }
    size_t start = args + name + 1, len = end - 1 - start;
    st->calls++;
    put_str(st->host, out, "{\"greeting\":\"hello, ");
    put(st->host, out, (const char *)(p + start), len);
    put_str(st->host, out, "\"}");
    return HEARTH_OK;
}

static void hello_shutdown(void *state) {
    HelloState *st = state;
    say(st->host, HEARTH_LOG_INFO, "hello-c plugin shutdown");
    free(st);
}

static const HearthPlugin HEADER = {
    .struct_size = sizeof(HearthPlugin),
    .magic = HEARTH_ABI_MAGIC,
    .abi_major = HEARTH_ABI_MAJOR,
    .abi_minor = HEARTH_ABI_MINOR,
    .reserved = 0,
    .name = {(const uint8_t *)"hello-c", 7},
    .version = {(const uint8_t *)"0.1.0", 5},
    .init = hello_init,
    .describe = hello_describe,
    .invoke = hello_invoke,
    .shutdown = hello_shutdown,
};

HEARTH_EXPORT const HearthPlugin *hearth_plugin_v1(void) {
    return &HEADER;
}
