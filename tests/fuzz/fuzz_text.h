/* tests/fuzz/fuzz_text.h: what the text parsers' harnesses share (chip
 * files, model files, mesh shapes, HLO lines): the fuzzer's bytes as a C
 * string, and the promise every refusal keeps. Static inline, one copy. */
#ifndef TILESIM_FUZZ_TEXT_H
#define TILESIM_FUZZ_TEXT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The bytes as a NUL-terminated text (a NUL inside ends it early, as for a
 * C string), malloc'd; NULL past max bytes (the parsers refuse long input
 * anyway) or when out of memory. */
static inline char *fz_text(const uint8_t *data, size_t size, size_t max)
{
    if (size > max) return NULL;
    char *text = malloc(size + 1);
    if (!text) return NULL;
    memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

/* A refusal's message is terminated inside its buffer and says something. */
static inline void fz_check_message(const char *err, size_t cap)
{
    if (!memchr(err, '\0', cap) || !err[0]) abort();
}

#endif
