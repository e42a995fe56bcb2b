# Sourced by docker/compose-demo.sh and docker/swarm-demo.sh: the stack's tokens as files for compose.yaml's
# `secrets:` (docs/deploy.md, "Secrets"). A token in a container's environment shows in `docker inspect` to
# everyone with access to docker; a secret is a file mounted at /run/secrets/NAME, and the programs read it
# through the NAME_FILE variable (ALLFOURS_ADMIN_TOKEN_FILE=/run/secrets/admin_token).
#
# Each token comes from its ALLFOURS_* variable when set (then unset here: the stack never sees the
# variable), else it is drawn (24 random bytes). The files go to $ALLFOURS_SECRETS when set (a folder
# that already holds the five files is used as it is), else to a new private folder; `secrets_cleanup`
# removes a folder made here. Files are 0444 in a 0700 folder: only root on this host reaches them, and
# the services' user (10001) can read the bind-mounted file (docker-compose mounts the host's file).
#
# Sets: ALLFOURS_SECRETS (exported: compose.yaml names the files by it), secrets_made (1 when made here).

# token file name -> the variable a caller may set it in
declare -A SECRET_VARS=(
  [admin_token]=ALLFOURS_ADMIN_TOKEN
  [metrics_token]=ALLFOURS_METRICS_TOKEN
  [token_random]=ALLFOURS_TOKEN_RANDOM
  [token_heuristic]=ALLFOURS_TOKEN_HEURISTIC
  [token_nodejs]=ALLFOURS_TOKEN_NODEJS
)

secrets_made=""
if [ -z "${ALLFOURS_SECRETS:-}" ]; then
  ALLFOURS_SECRETS=$(mktemp -d "${TMPDIR:-/tmp}/allfours-secrets.XXXXXX")  # 0700
  secrets_made=1
else
  mkdir -p -m 700 "$ALLFOURS_SECRETS"
  ALLFOURS_SECRETS=$(cd "$ALLFOURS_SECRETS" && pwd)
fi
export ALLFOURS_SECRETS
for name in "${!SECRET_VARS[@]}"; do
  var=${SECRET_VARS[$name]}
  file="$ALLFOURS_SECRETS/$name"
  if [ -n "${!var:-}" ]; then
    (umask 077 && printf '%s\n' "${!var}" > "$file.new") && mv -f "$file.new" "$file"
  elif [ ! -s "$file" ]; then
    (umask 077 && python3 -c 'import secrets; print(secrets.token_urlsafe(24))' > "$file.new") && mv -f "$file.new" "$file"
  fi
  chmod 0444 "$file"
  unset "$var"
done

# secrets_cleanup: remove the token files' folder when it was made here
secrets_cleanup() {
  if [ -n "$secrets_made" ]; then rm -rf "$ALLFOURS_SECRETS"; fi
}
