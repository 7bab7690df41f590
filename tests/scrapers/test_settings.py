import os

import pytest

from scrapers.settings import SettingsError, from_env


def secrets(tmp_path, text: str, mode: int = 0o600):
    path = tmp_path / "secrets.env"
    path.write_text(text)
    os.chmod(path, mode)
    return {"GPULEDGER_SECRETS_FILE": str(path)}


def test_credentials_come_from_an_owner_only_secrets_file(tmp_path):
    env = secrets(tmp_path, "# keys\nRUNPOD_API_KEY=rp-from-file\nexport VERDA_CLIENT_ID='id-from-file'\n")
    settings = from_env(env)
    assert (settings.runpod_api_key, settings.verda_client_id) == ("rp-from-file", "id-from-file")


def test_the_environment_wins_over_the_file(tmp_path):
    env = secrets(tmp_path, "RUNPOD_API_KEY=rp-from-file\n") | {"RUNPOD_API_KEY": "rp-from-env"}
    assert from_env(env).runpod_api_key == "rp-from-env"


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660])
def test_a_file_others_can_read_is_refused_without_showing_its_values(tmp_path, mode):
    env = secrets(tmp_path, "RUNPOD_API_KEY=rp-secret-value\n", mode)
    with pytest.raises(SettingsError, match="chmod 600") as caught:
        from_env(env)
    assert "rp-secret-value" not in str(caught.value)


def test_unknown_names_in_the_file_are_refused_by_line(tmp_path):
    with pytest.raises(SettingsError, match=r"secrets.env:2: expected NAME=value"):
        from_env(secrets(tmp_path, "RUNPOD_API_KEY=x\nAWS_SECRET=y\n"))


def test_no_file_means_environment_only(tmp_path):
    assert from_env({"GPULEDGER_SECRETS_FILE": str(tmp_path / "absent.env")}).runpod_api_key is None


def test_hugging_face_settings_the_repositories_to_follow_and_the_token(tmp_path):
    env = secrets(tmp_path, "HF_TOKEN=hf_from_the_file\n") | {
        "GPULEDGER_HF_MODELS": "Qwen/Qwen3-VL-8B-Instruct, google/gemma-3-27b-it\nmistralai/Mistral-Nemo-Instruct-2407",
        "GPULEDGER_HF_URL": "http://hf.test"}
    settings = from_env(env)
    assert settings.hf_models == ("Qwen/Qwen3-VL-8B-Instruct", "google/gemma-3-27b-it",
                                  "mistralai/Mistral-Nemo-Instruct-2407")
    assert (settings.huggingface_url, settings.hf_token) == ("http://hf.test", "hf_from_the_file")
    assert "hf_from_the_file" in settings.secrets() and "hf_from_the_file" not in repr(settings)
    with pytest.raises(SettingsError, match=r"GPULEDGER_HF_MODELS: 'gemma' is not a Hugging Face repository"):
        from_env({"GPULEDGER_HF_MODELS": "Qwen/Qwen3-8B gemma"})
