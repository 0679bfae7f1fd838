/*
 * The partix port extensions from C (include/arinc653/partix_ports.h), in a partition started by
 * the real executive (crates/partix-runtime/tests/ports_c.rs, module
 * crates/partix-runtime/tests/ports/partix_c.xml: S_OUT -> S_IN and Q_OUT -> Q_IN inside this
 * partition, transport given by the module).
 *
 * Appends one line per check, "SERVICE CASE rc=NAME" (or "VALUE NAME N"), to the file argv[1];
 * the test compares the lines with ports_partix.expected. main() runs the initialisation checks,
 * then the process "driver" runs the waits and writes "END".
 */
#define _POSIX_C_SOURCE 200809L

#include <arinc653/apex.h>
#include <arinc653/partix_ports.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *out;

static const char *rc_name(RETURN_CODE_TYPE rc)
{
    switch (rc) {
    case NO_ERROR:       return "NO_ERROR";
    case NO_ACTION:      return "NO_ACTION";
    case NOT_AVAILABLE:  return "NOT_AVAILABLE";
    case INVALID_PARAM:  return "INVALID_PARAM";
    case INVALID_CONFIG: return "INVALID_CONFIG";
    case INVALID_MODE:   return "INVALID_MODE";
    case TIMED_OUT:      return "TIMED_OUT";
    }
    return "UNKNOWN";
}

#define CHECK(SERVICE, CASE, ...)                                                    \
    do {                                                                             \
        RETURN_CODE_TYPE rc = (RETURN_CODE_TYPE)99;                                  \
        __VA_ARGS__;                                                                 \
        fprintf(out, "%s %s rc=%s\n", SERVICE, CASE, rc_name(rc));                   \
        fflush(out);                                                                 \
    } while (0)

#define VALUE(NAME, V)                                                               \
    do {                                                                             \
        fprintf(out, "VALUE %s %lld\n", NAME, (long long)(V));                       \
        fflush(out);                                                                 \
    } while (0)

#define MS 1000000LL

static SAMPLING_PORT_ID_TYPE s_out, s_in;
static QUEUING_PORT_ID_TYPE q_out, q_in;

static void driver(void)
{
    APEX_BYTE buf[16];
    MESSAGE_SIZE_TYPE len = -1;
    VALIDITY_TYPE validity = INVALID;

    CHECK("WRITE_SAMPLING_MESSAGE", "hello",
          WRITE_SAMPLING_MESSAGE(s_out, (MESSAGE_ADDR_TYPE)"hello", 5, &rc));
    CHECK("PARTIX_WAIT_SAMPLING_MESSAGE", "newer timeout=1s",
          PARTIX_WAIT_SAMPLING_MESSAGE(s_in, 1000 * MS, buf, &len, &validity, &rc));
    VALUE("length", len);
    VALUE("validity", validity);
    VALUE("same bytes", memcmp(buf, "hello", 5) == 0);
    CHECK("PARTIX_WAIT_SAMPLING_MESSAGE", "nothing newer timeout=0",
          PARTIX_WAIT_SAMPLING_MESSAGE(s_in, 0, buf, &len, &validity, &rc));
    CHECK("PARTIX_WAIT_SAMPLING_MESSAGE", "nothing newer timeout=20ms",
          PARTIX_WAIT_SAMPLING_MESSAGE(s_in, 20 * MS, buf, &len, &validity, &rc));
    CHECK("PARTIX_WAIT_SAMPLING_MESSAGE", "timeout=-5",
          PARTIX_WAIT_SAMPLING_MESSAGE(s_in, -5, buf, &len, &validity, &rc));
    CHECK("WRITE_SAMPLING_MESSAGE", "again",
          WRITE_SAMPLING_MESSAGE(s_out, (MESSAGE_ADDR_TYPE)"again!", 6, &rc));
    CHECK("PARTIX_WAIT_SAMPLING_MESSAGE", "newer again",
          PARTIX_WAIT_SAMPLING_MESSAGE(s_in, INFINITE_TIME_VALUE, buf, &len, &validity, &rc));
    VALUE("length", len);

    CHECK("SEND_QUEUING_MESSAGE", "a",
          SEND_QUEUING_MESSAGE(q_out, (MESSAGE_ADDR_TYPE)"a", 1, 0, &rc));
    CHECK("RECEIVE_QUEUING_MESSAGE", "blocking mode",
          RECEIVE_QUEUING_MESSAGE(q_in, 1000 * MS, buf, &len, &rc));
    VALUE("length", len);
    CHECK("PARTIX_SET_QUEUING_PORT_RECV_MODE", "spin",
          PARTIX_SET_QUEUING_PORT_RECV_MODE(q_in, PARTIX_RECV_SPIN, 0, &rc));
    CHECK("RECEIVE_QUEUING_MESSAGE", "spin mode, empty, timeout=10ms",
          RECEIVE_QUEUING_MESSAGE(q_in, 10 * MS, buf, &len, &rc));
    CHECK("PARTIX_SET_QUEUING_PORT_RECV_MODE", "spin then park 100",
          PARTIX_SET_QUEUING_PORT_RECV_MODE(q_in, PARTIX_RECV_SPIN_THEN_PARK, 100, &rc));
    CHECK("RECEIVE_QUEUING_MESSAGE", "spin-then-park mode, empty, timeout=10ms",
          RECEIVE_QUEUING_MESSAGE(q_in, 10 * MS, buf, &len, &rc));
    {
        MESSAGE_ADDR_TYPE msgs[3] = {(MESSAGE_ADDR_TYPE)"one", (MESSAGE_ADDR_TYPE)"two!",
                                     (MESSAGE_ADDR_TYPE)"three"};
        MESSAGE_SIZE_TYPE lens[3] = {3, 4, 5};
        MESSAGE_SIZE_TYPE bad[2] = {3, 9};
        MESSAGE_SIZE_TYPE mixed[2] = {0, 9}; /* an empty message before one too long */
        MESSAGE_SIZE_TYPE got[4] = {0, 0, 0, 0};
        APEX_INTEGER n = -1;
        unsigned char many[4 * 8];
        CHECK("PARTIX_SEND_QUEUING_MESSAGES", "3 messages",
              PARTIX_SEND_QUEUING_MESSAGES(q_out, msgs, lens, 3, 0, &n, &rc));
        VALUE("sent", n);
        CHECK("PARTIX_SEND_QUEUING_MESSAGES", "3 more, room for 1",
              PARTIX_SEND_QUEUING_MESSAGES(q_out, msgs, lens, 3, 0, &n, &rc));
        VALUE("sent", n);
        CHECK("PARTIX_SEND_QUEUING_MESSAGES", "full, timeout=0",
              PARTIX_SEND_QUEUING_MESSAGES(q_out, msgs, lens, 3, 0, &n, &rc));
        VALUE("sent", n);
        CHECK("PARTIX_RECEIVE_QUEUING_MESSAGES", "up to 4",
              PARTIX_RECEIVE_QUEUING_MESSAGES(q_in, 1000 * MS, many, got, 4, &n, &rc));
        VALUE("received", n);
        VALUE("lengths", got[0] * 1000 + got[1] * 100 + got[2] * 10 + got[3]);
        VALUE("same bytes", memcmp(many, "one", 3) == 0 && memcmp(many + 8, "two!", 4) == 0 &&
                                memcmp(many + 16, "three", 5) == 0 && memcmp(many + 24, "one", 3) == 0);
        CHECK("PARTIX_RECEIVE_QUEUING_MESSAGES", "empty, timeout=0",
              PARTIX_RECEIVE_QUEUING_MESSAGES(q_in, 0, many, got, 4, &n, &rc));
        CHECK("PARTIX_SEND_QUEUING_MESSAGES", "a message too long",
              PARTIX_SEND_QUEUING_MESSAGES(q_out, msgs, bad, 2, 0, &n, &rc));
        CHECK("PARTIX_SEND_QUEUING_MESSAGES", "empty then too long",
              PARTIX_SEND_QUEUING_MESSAGES(q_out, msgs, mixed, 2, 0, &n, &rc));
        CHECK("PARTIX_SEND_QUEUING_MESSAGES", "count 0",
              PARTIX_SEND_QUEUING_MESSAGES(q_out, msgs, lens, 0, 0, &n, &rc));
        CHECK("PARTIX_RECEIVE_QUEUING_MESSAGES", "source port",
              PARTIX_RECEIVE_QUEUING_MESSAGES(q_out, 0, many, got, 4, &n, &rc));
    }
    fprintf(out, "END\n");
    fflush(out);
    for (;;) {
        RETURN_CODE_TYPE rc;
        TIMED_WAIT(1000 * MS, &rc);
    }
}

int main(int argc, char **argv)
{
    RETURN_CODE_TYPE rc;
    PROCESS_ID_TYPE pid;
    APEX_BYTE buf[16];
    MESSAGE_SIZE_TYPE len = -1;
    VALIDITY_TYPE validity = INVALID;
    PROCESS_ATTRIBUTE_TYPE attr;

    out = fopen(argc > 1 ? argv[1] : "/dev/null", "a");
    if (!out)
        return 1;
    CREATE_SAMPLING_PORT("S_OUT", 16, SOURCE, 1000 * MS, &s_out, &rc);
    CREATE_SAMPLING_PORT("S_IN", 16, DESTINATION, 1000 * MS, &s_in, &rc);
    CREATE_QUEUING_PORT("Q_OUT", 8, 4, SOURCE, FIFO, &q_out, &rc);
    CREATE_QUEUING_PORT("Q_IN", 8, 4, DESTINATION, FIFO, &q_in, &rc);

    {
        PARTIX_RECV_MODE_TYPE mode = (PARTIX_RECV_MODE_TYPE)9;
        APEX_INTEGER spins = -1;
        /* partix_c.xml gives S_IN partix:ReceiveMode="spin"; Q_IN has the default. */
        CHECK("PARTIX_GET_QUEUING_PORT_RECV_MODE", "default",
              PARTIX_GET_QUEUING_PORT_RECV_MODE(q_in, &mode, &spins, &rc));
        fprintf(out, "VALUE mode %d\nVALUE spins %ld\n", (int)mode, (long)spins);
        CHECK("PARTIX_GET_SAMPLING_PORT_RECV_MODE", "from the configuration",
              PARTIX_GET_SAMPLING_PORT_RECV_MODE(s_in, &mode, &spins, &rc));
        fprintf(out, "VALUE mode %d\nVALUE spins %ld\n", (int)mode, (long)spins);
        CHECK("PARTIX_GET_QUEUING_PORT_RECV_MODE", "bad id",
              PARTIX_GET_QUEUING_PORT_RECV_MODE(99, &mode, &spins, &rc));
        CHECK("PARTIX_GET_SAMPLING_PORT_RECV_MODE", "null mode",
              PARTIX_GET_SAMPLING_PORT_RECV_MODE(s_in, NULL, &spins, &rc));
        CHECK("PARTIX_SET_QUEUING_PORT_RECV_MODE", "blocking",
              PARTIX_SET_QUEUING_PORT_RECV_MODE(q_in, PARTIX_RECV_BLOCKING, 0, &rc));
        CHECK("PARTIX_GET_QUEUING_PORT_RECV_MODE", "after SET blocking",
              PARTIX_GET_QUEUING_PORT_RECV_MODE(q_in, &mode, &spins, &rc));
        fprintf(out, "VALUE mode %d\nVALUE spins %ld\n", (int)mode, (long)spins);
    }
    CHECK("PARTIX_SET_QUEUING_PORT_RECV_MODE", "source port, spin",
          PARTIX_SET_QUEUING_PORT_RECV_MODE(q_out, PARTIX_RECV_SPIN, 0, &rc));
    CHECK("PARTIX_SET_QUEUING_PORT_RECV_MODE", "bad id",
          PARTIX_SET_QUEUING_PORT_RECV_MODE(99, PARTIX_RECV_BLOCKING, 0, &rc));
    CHECK("PARTIX_SET_QUEUING_PORT_RECV_MODE", "bad mode",
          PARTIX_SET_QUEUING_PORT_RECV_MODE(q_in, (PARTIX_RECV_MODE_TYPE)7, 0, &rc));
    CHECK("PARTIX_SET_QUEUING_PORT_RECV_MODE", "negative spins",
          PARTIX_SET_QUEUING_PORT_RECV_MODE(q_in, PARTIX_RECV_SPIN_THEN_PARK, -1, &rc));
    CHECK("PARTIX_SET_SAMPLING_PORT_RECV_MODE", "blocking",
          PARTIX_SET_SAMPLING_PORT_RECV_MODE(s_in, PARTIX_RECV_BLOCKING, 0, &rc));
    CHECK("PARTIX_SET_SAMPLING_PORT_RECV_MODE", "bad id",
          PARTIX_SET_SAMPLING_PORT_RECV_MODE(99, PARTIX_RECV_BLOCKING, 0, &rc));
    CHECK("PARTIX_WAIT_SAMPLING_MESSAGE", "nothing written, timeout=0",
          PARTIX_WAIT_SAMPLING_MESSAGE(s_in, 0, buf, &len, &validity, &rc));
    CHECK("PARTIX_WAIT_SAMPLING_MESSAGE", "source port",
          PARTIX_WAIT_SAMPLING_MESSAGE(s_out, 0, buf, &len, &validity, &rc));
    CHECK("PARTIX_WAIT_SAMPLING_MESSAGE", "bad id",
          PARTIX_WAIT_SAMPLING_MESSAGE(99, 0, buf, &len, &validity, &rc));
    CHECK("PARTIX_WAIT_SAMPLING_MESSAGE", "null length",
          PARTIX_WAIT_SAMPLING_MESSAGE(s_in, 0, buf, NULL, &validity, &rc));
    CHECK("PARTIX_WAIT_SAMPLING_MESSAGE", "timeout in initialisation (not a process)",
          PARTIX_WAIT_SAMPLING_MESSAGE(s_in, 10 * MS, buf, &len, &validity, &rc));

    memset(&attr, 0, sizeof attr);
    strncpy(attr.NAME, "driver", sizeof attr.NAME);
    attr.ENTRY_POINT = (SYSTEM_ADDRESS_TYPE)driver;
    attr.STACK_SIZE = 0;
    attr.BASE_PRIORITY = 10;
    attr.PERIOD = INFINITE_TIME_VALUE;
    attr.TIME_CAPACITY = INFINITE_TIME_VALUE;
    attr.DEADLINE = SOFT;
    CREATE_PROCESS(&attr, &pid, &rc);
    START(pid, &rc);
    SET_PARTITION_MODE(NORMAL, &rc);
    return 1;
}
