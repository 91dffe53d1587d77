/* cli/csv.c: one field of a CSV line, for the files `calibrate` and `tune`
 * read (cli/cli.h, cli_csv_field).
 *
 * A spreadsheet or pandas writes a field in double quotes when it holds a
 * comma or a quote, and some people quote every field by hand: so a field
 * that starts with '"' runs to its closing quote, "" inside it standing for
 * one quote (RFC 4180), and the quotes are not part of the value. Fields
 * are trimmed of spaces and tabs (and a CR, for files written on Windows).
 */
#include <string.h>

#include "cli.h"

static int blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

char *cli_csv_field(char **at, int *bad)
{
    char *s = *at;
    while (blank(*s)) s++;
    if (*s != '"') {
        char *end = s + strcspn(s, ",");
        *at = *end ? end + 1 : NULL;
        *end = '\0';
        for (char *e = end; e > s && blank(e[-1]); e--) e[-1] = '\0';
        return s;
    }
    char *field = ++s, *w = s; /* unquote in place: w never passes s */
    for (;; s++) {
        if (!*s) { /* no closing quote on this line */
            *bad = 1;
            *w = '\0';
            *at = NULL;
            return field;
        }
        if (*s == '"' && s[1] == '"') *w++ = '"', s++;
        else if (*s == '"') break;
        else *w++ = *s;
    }
    *w = '\0';
    for (s++; blank(*s); s++) {}
    if (*s && *s != ',') *bad = 1; /* text after the closing quote */
    *at = *s == ',' ? s + 1 : NULL;
    return field;
}
