"""`hat chat --prompt` answers through our model and sampler."""

from hat_jax.cli.main import main


def test_chat_answers_a_question(capsys):
    assert (
        main(
            [
                "chat",
                "--prompt",
                "What is the capital of France?",
                "--max-new-tokens",
                "24",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Paris" in out


def test_bad_model_path_is_a_clear_error(capsys):
    assert main(["chat", "--model", "/nonexistent/model", "--prompt", "hi"]) == 1
    assert "no such file or folder" in capsys.readouterr().err
