/* Compiled once per header with -DHEADER=<arinc653/xxx.h>: each header stands alone. */
#define _POSIX_C_SOURCE 200809L
#include HEADER
#include HEADER /* include guards */
#include <time.h> /* the C library's <time.h> is not hidden by <arinc653/time.h> */

int main(void)
{
    struct timespec ts;
    return clock_gettime(CLOCK_MONOTONIC, &ts);
}
