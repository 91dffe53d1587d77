/* cli/cli_main.c: the `tilesim` command's main(). The work is in
 * tilesim_main (main.c), which the fuzz harness calls in-process. */
#include "cli.h"

int main(int argc, char **argv) { return tilesim_main(argc, argv); }
