/* test_attach_config.c — the client data `heaplens attach` sends (collector/attach_config.h):
 * every key parsed as session/attach_session.c writes it, census=on|off among them, and texts
 * that are not ours refused. */
#include <string.h>

#include "collector/attach_config.h"
#include "tests/unit/common/check.h"

static bool parse(const char *text, hl_attach_config *c) {
    return hl_attach_config_parse(text, strlen(text), c);
}

static void test_keys(void) {
    hl_attach_config c;
    CHECK(parse(HL_ATTACH_CONFIG_MAGIC "\nsocket=/tmp/s/collector.sock\nsnapshot=gen2\n"
                                       "count=A.B.*;C.D\nstrings=off\nstacks=off\ncensus=off\n",
                &c));
    CHECK_STR(c.socket_path, "/tmp/s/collector.sock");
    CHECK_STR(c.snapshot_policy, "gen2");
    CHECK_STR(c.count, "A.B.*;C.D");
    CHECK(c.no_strings && c.no_stacks);
    CHECK_INT(c.census, HL_CENSUS_OFF);
    /* census=on overrides a target's HEAPLENS_CENSUS=off; absent, the environment decides */
    CHECK(parse(HL_ATTACH_CONFIG_MAGIC "\nsocket=/tmp/s/c.sock\ncensus=on", &c));
    CHECK_INT(c.census, HL_CENSUS_ON);
    CHECK(!c.no_strings && !c.no_stacks);
    CHECK(parse(HL_ATTACH_CONFIG_MAGIC "\nsocket=/tmp/s/c.sock\n", &c));
    CHECK_INT(c.census, HL_CENSUS_DEFAULT);
    /* an unknown value is an unknown key: ignored, as a newer heaplens's keys are */
    CHECK(parse(HL_ATTACH_CONFIG_MAGIC "\nsocket=/tmp/s/c.sock\ncensus=maybe\ncensus=offx\n", &c));
    CHECK_INT(c.census, HL_CENSUS_DEFAULT);
}

static void test_refused(void) {
    hl_attach_config c;
    CHECK(!parse("heaplens-attach 2\nsocket=/tmp/s/c.sock\n", &c));
    CHECK(!parse(HL_ATTACH_CONFIG_MAGIC "\ncensus=off\n", &c));           /* no socket */
    CHECK(!parse(HL_ATTACH_CONFIG_MAGIC "\nsocket=relative.sock\n", &c)); /* not a path */
    CHECK(!hl_attach_config_parse(NULL, 0, &c));
}

int main(void) {
    test_keys();
    test_refused();
    return failures != 0;
}
