/* sim/base/json.h: the JSON writer of the library and the tilesim command
 * (reports, traces, sweep results). Internal: not installed, not API; it
 * keeps its pl_ name from the days it was declared in sim/tilesim.h.
 */
#ifndef TILESIM_JSON_H
#define TILESIM_JSON_H

#include <stdio.h>

/* Write s as a JSON string literal: quote and backslash escaped, newline as
 * \n, other control bytes as \u00XX, the rest (UTF-8 included) as is. s
 * NULL: "". f NULL: nothing. */
void pl_json_string(FILE *f, const char *s);

#endif
