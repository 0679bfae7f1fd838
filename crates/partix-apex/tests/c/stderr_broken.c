/* A service called with a null RETURN_CODE reports that on stderr; when stderr is broken (a pipe
   whose reader is gone, SIGPIPE ignored: write fails with EPIPE) the report is lost, and the
   partition goes on. */
#include <arinc653/time.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    int p[2];
    SYSTEM_TIME_TYPE t = 0;
    RETURN_CODE_TYPE rc = NOT_AVAILABLE;

    if (pipe(p) != 0)
        return 2;
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    if (dup2(p[1], 2) < 0)
        return 3;
    GET_TIME(&t, NULL);
    GET_TIME(&t, &rc);
    printf("GET_TIME after a lost report rc=%d\n", (int)rc);
    return 0;
}
