
/* The same orchestration under a config that says its graph is never kept. */
SP_ORCH_CONFIG(replay_hbg_never_config)
{
    replay_hbg_config(cfg);
    cfg->replay = SP_ORCH_REPLAY_NEVER;
}
