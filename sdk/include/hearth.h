/*
 * hearth.h - the hearth plugin ABI, version 1.1.
 *
 * A plugin is a shared library that exports one function,
 * `hearth_plugin_v1`, returning a pointer to a static HearthPlugin header.
 * Everything that crosses the boundary is a #[repr(C)] struct, an integer,
 * a function pointer or UTF-8 bytes (pointer + length). Payloads are JSON
 * documents whose shapes are described in docs/plugins.md.
 *
 * The rules (docs/plugins.md explains each):
 *   - Every struct starts with its own size. Fields are only ever appended;
 *     a reader copies min(size, its own size) into a zeroed struct.
 *   - The host refuses a plugin with another ABI major, or a newer minor.
 *   - Whoever allocates, frees. A borrowed HearthStr is valid for the
 *     duration of the call only; copy what you keep. Results go back through
 *     host->write_result, which copies.
 *   - The HearthHostApi pointer handed to init stays valid until shutdown
 *     returns, and its callbacks may be called from any thread.
 *   - init, describe, invoke and shutdown may be called from any host
 *     thread; invoke may run on several threads at once.
 *   - A plugin is never unloaded: after shutdown returns, none of its
 *     threads may still run.
 *
 * The Rust mirror of this file is hearth_sdk::abi; a test keeps them equal.
 */
#ifndef HEARTH_H
#define HEARTH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "HRTH": the first field after struct_size of every plugin header. */
#define HEARTH_ABI_MAGIC 0x48525448u
#define HEARTH_ABI_MAJOR 1u
#define HEARTH_ABI_MINOR 1u

/* The one symbol a plugin exports. */
#define HEARTH_ENTRY_SYMBOL "hearth_plugin_v1"

/* Status codes returned across the boundary, in both directions. */
#define HEARTH_OK 0          /* success; a sink holds the JSON result */
#define HEARTH_ERROR 1       /* failure; a sink holds a UTF-8 message */
#define HEARTH_UNSUPPORTED 2 /* the method or service is not known */
#define HEARTH_PANIC 3       /* the plugin caught an internal crash */
#define HEARTH_BUSY 4        /* the host queue stayed full, or storing failed; retry later */
#define HEARTH_CLOSED 5      /* the host is shutting down */
#define HEARTH_INVALID 6     /* the payload was malformed (see the log) */
#define HEARTH_REFUSED 7     /* (1.1) refused for good: the host does not retry */

/* Log levels for HearthHostApi.log. */
#define HEARTH_LOG_ERROR 1u
#define HEARTH_LOG_WARN 2u
#define HEARTH_LOG_INFO 3u
#define HEARTH_LOG_DEBUG 4u
#define HEARTH_LOG_TRACE 5u

/* Methods for HearthPlugin.invoke. */
#define HEARTH_METHOD_TOOL_CALL "tool.call"
#define HEARTH_METHOD_CHANNEL_SEND "channel.send"
#define HEARTH_METHOD_CHANNEL_EVENT "channel.event"
/* Stop a running call, {"call_id": "..."} (docs/plugins.md). A plugin that
 * cannot answers HEARTH_UNSUPPORTED, as for any method it does not know. */
#define HEARTH_METHOD_TOOL_CANCEL "tool.cancel"
/* The health of the parts a plugin runs, answered {"parts": [...]}
 * (docs/plugins.md); HEARTH_UNSUPPORTED when it has none to report. */
#define HEARTH_METHOD_PLUGIN_STATUS "plugin.status"
/* The owner's action on a live view the plugin showed (docs/plugins.md);
 * HEARTH_UNSUPPORTED from a plugin that shows none. */
#define HEARTH_METHOD_VIEW_INPUT "view.input"

/* Services for HearthHostApi.call that a tool plugin may use. */
#define HEARTH_SERVICE_HOST_INFO "host.info"
/* A piece of a running call's live output (docs/plugins.md). */
#define HEARTH_SERVICE_TOOL_OUTPUT "tool.output"
/* The plugin's whole tool list from now on, {"tools": [...]} (docs/plugins.md). */
#define HEARTH_SERVICE_TOOLS_SET "tools.set"
/* A summary of long output by the owner's cheap model (docs/plugins.md). */
#define HEARTH_SERVICE_MODEL_SUMMARIZE "model.summarize"
/* A frame of a live view the owner can watch, answered {"shown": bool}
 * (docs/plugins.md). */
#define HEARTH_SERVICE_VIEW_SHOW "view.show"

/* Borrowed UTF-8 bytes; not NUL-terminated. */
typedef struct HearthStr {
    const uint8_t *ptr;
    size_t len;
} HearthStr;

/* A host-owned buffer; write into it with HearthHostApi.write_result. */
typedef struct HearthSink HearthSink;

/* Receives the answer of HearthHostApi.call; the bytes are borrowed. */
typedef void (*HearthReceiveFn)(void *user, HearthStr bytes);

/* What the host offers a plugin. Valid from init until shutdown returns. */
typedef struct HearthHostApi {
    uint32_t struct_size;
    uint16_t abi_major;
    uint16_t abi_minor;
    void *ctx;
    /* Forward one log record; never blocks for long, never fails. */
    void (*log)(void *ctx, uint32_t level, HearthStr target, HearthStr message);
    /* Submit an inbound event (JSON). HEARTH_OK for a message means it is
     * stored: only then may the channel acknowledge it upstream. */
    int32_t (*submit)(void *ctx, HearthStr event_json);
    /* Call a host service. Before returning, the host calls receive once
     * with the JSON answer (HEARTH_OK) or an error message. */
    int32_t (*call)(void *ctx, HearthStr service, HearthStr request_json,
                    void *user, HearthReceiveFn receive);
    /* Append bytes to a sink the host passed in; the host copies them. */
    void (*write_result)(HearthSink *sink, HearthStr bytes);
} HearthHostApi;

/* What a plugin exports through hearth_plugin_v1. */
typedef struct HearthPlugin {
    uint32_t struct_size;
    uint32_t magic;
    uint16_t abi_major;
    uint16_t abi_minor;
    uint32_t reserved; /* zero */
    HearthStr name;    /* static */
    HearthStr version; /* static */
    /* Build the plugin's state from its config table (JSON object). On
     * failure write a message to `error` and return HEARTH_ERROR. */
    int32_t (*init)(const HearthHostApi *host, HearthStr config_json,
                    void **state_out, HearthSink *error);
    /* Write {"tools": [...], "channel": {...} | null} to `out`. */
    int32_t (*describe)(void *state, HearthSink *out);
    /* Run one method ("tool.call", "channel.send", ...) on a JSON payload. */
    int32_t (*invoke)(void *state, HearthStr method, HearthStr payload_json,
                      HearthSink *out);
    /* Stop threads, flush, free the state. Called once, last. */
    void (*shutdown)(void *state);
} HearthPlugin;

typedef const HearthPlugin *(*HearthEntryFn)(void);

/* Mark the entry point exported, even when building with hidden visibility. */
#if defined(_WIN32)
#define HEARTH_EXPORT __declspec(dllexport)
#else
#define HEARTH_EXPORT __attribute__((visibility("default")))
#endif

/* Helper for C plugins: a HearthStr from a NUL-terminated literal. */
#define HEARTH_STR(s) ((HearthStr){(const uint8_t *)(s), sizeof(s) - 1})

#ifdef __cplusplus
}
#endif

#endif /* HEARTH_H */
