/*
 * A classic APEX partition written for another ARINC 653 platform (POK/AIR style), kept
 * unchanged: it includes the headers one by one, assigns a function to ENTRY_POINT, fills NAME
 * with strncpy, creates and starts its processes, then switches to NORMAL mode.
 *
 * The test compiles it with -std=c99 -Wall -Wextra -Werror, links it against libpartix_apex and
 * runs it standalone for a moment.
 */
#include <arinc653/types.h>
#include <arinc653/partition.h>
#include <arinc653/process.h>
#include <arinc653/time.h>
#include <arinc653/error.h>
#include <arinc653/blackboard.h>
#include <arinc653/buffer.h>
#include <arinc653/semaphore.h>
#include <arinc653/event.h>

#include <stdio.h>
#include <string.h>

static int counter = 0;
static SEMAPHORE_ID_TYPE  lock_sem;
static BLACKBOARD_ID_TYPE board;

static void pinger_job(void)
{
    RETURN_CODE_TYPE ret;
    SYSTEM_TIME_TYPE now;

    while (1) {
        GET_TIME(&now, &ret);
        counter++;
        if (counter <= 3) {
            char             msg[8];
            MESSAGE_SIZE_TYPE len = 0;
            printf("PING %d rc=%d\n", counter, (int)ret);
            WAIT_SEMAPHORE(lock_sem, INFINITE_TIME_VALUE, &ret);
            msg[0] = (char)('0' + counter);
            DISPLAY_BLACKBOARD(board, (MESSAGE_ADDR_TYPE)msg, 1, &ret);
            READ_BLACKBOARD(board, 0, (MESSAGE_ADDR_TYPE)msg, &len, &ret);
            printf("BOARD %c len=%d rc=%d\n", msg[0], (int)len, (int)ret);
            SIGNAL_SEMAPHORE(lock_sem, &ret);
            fflush(stdout);
        }
        PERIODIC_WAIT(&ret);
    }
}

int main(void)
{
    PROCESS_ID_TYPE        pid;
    PROCESS_ATTRIBUTE_TYPE tattr;
    RETURN_CODE_TYPE       ret;

    memset(&tattr, 0, sizeof(tattr));
    tattr.ENTRY_POINT   = pinger_job;
    tattr.PERIOD        = 10000000;   /* 10 ms */
    tattr.TIME_CAPACITY = 10000000;
    tattr.DEADLINE      = SOFT;
    tattr.BASE_PRIORITY = 42;
    tattr.STACK_SIZE    = 0x4000;
    strncpy(tattr.NAME, "pinger", MAX_NAME_LENGTH);

    CREATE_PROCESS(&tattr, &pid, &ret);
    printf("CREATE_PROCESS rc=%d\n", (int)ret);
    START(pid, &ret);
    printf("START rc=%d\n", (int)ret);
    {
        /* a name literal shorter than MAX_NAME_LENGTH, as partitions usually pass it */
        PROCESS_ID_TYPE again;
        GET_PROCESS_ID("pinger", &again, &ret);
        printf("GET_PROCESS_ID rc=%d same=%d\n", (int)ret, again == pid);
        REPORT_APPLICATION_MESSAGE((MESSAGE_ADDR_TYPE)"pinger ready", 12, &ret);
        printf("REPORT_APPLICATION_MESSAGE rc=%d\n", (int)ret);
    }
    {
        /* names in the NAME_TYPE arrays of the standard, filled with strncpy */
        SEMAPHORE_NAME_TYPE  sname;
        BLACKBOARD_NAME_TYPE bname;
        strncpy(sname, "lock", MAX_NAME_LENGTH);
        strncpy(bname, "board", MAX_NAME_LENGTH);
        CREATE_SEMAPHORE(sname, 1, 1, FIFO, &lock_sem, &ret);
        printf("CREATE_SEMAPHORE rc=%d\n", (int)ret);
        CREATE_BLACKBOARD(bname, 8, &board, &ret);
        printf("CREATE_BLACKBOARD rc=%d\n", (int)ret);
    }
    fflush(stdout);

    SET_PARTITION_MODE(NORMAL, &ret);
    printf("SET_PARTITION_MODE returned rc=%d\n", (int)ret);
    return 1;
}
