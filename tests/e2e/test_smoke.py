from tests.support.common import PASSWORD


def test_login_and_help(server, new_user):
    name = new_user()
    with server.connect() as c:
        assert c.cmd(f"USER:{name}").code == 101
        r = c.cmd(f"PASS:{PASSWORD}")
        assert (r.code, r.text) == (102, name)
        parts = c.cmd_all("HELP")
        assert parts[-1].code == 110 and "JGDA" in "".join(p.text for p in parts)
        c.send("QUIT")
        assert c.is_closed()
