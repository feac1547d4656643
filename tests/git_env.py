"""A git environment that makes commits reproducible (fixed author, committer and dates) and reads no system or
global configuration, for tests that compare what git writes with and without the sandbox."""

GIT_TEST_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "GIT_AUTHOR_DATE": "2026-01-02T03:04:05Z",
    "GIT_COMMITTER_DATE": "2026-01-02T03:04:05Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}
