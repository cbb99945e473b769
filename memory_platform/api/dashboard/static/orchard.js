// The orchard page (templates/orchard.html): each form's buttons send JSON to the REST
// routes (api/orchard.py) and reload the page on success; an error shows beside the form.
async function send(method,url,body){const r=await fetch(url,{method,headers:
 {'Content-Type':'application/json'},body:JSON.stringify(body||{})});
 let d={};try{d=await r.json()}catch(e){}return [r.status,d];}
const val=(f,n)=>f.elements[n].value.trim();
function edits(f){return {status:val(f,'status'),priority:+val(f,'priority'),
 deadline:val(f,'deadline')||null,next_action:val(f,'next_action')||null,
 blockers:val(f,'blockers').split('\n').map(s=>s.trim()).filter(Boolean)};}
const actions={
 save:f=>send('PATCH',`/orchard/projects/${f.dataset.id}`,edits(f)),
 archive:f=>send('PATCH',`/orchard/projects/${f.dataset.id}`,{archived:true}),
 restore:f=>send('PATCH',`/orchard/projects/${f.dataset.id}`,{archived:false}),
 milestone:f=>send('POST',`/orchard/projects/${f.dataset.id}/milestones`,
  {what:val(f,'milestone'),next_action:val(f,'next_action')||null}),
 add:f=>send('POST','/orchard/projects',{name:val(f,'name'),namespace:val(f,'namespace'),
  repo:val(f,'repo')||null}),
 accept:f=>send('POST',`/orchard/proposals/${f.dataset.id}/accept`,
  val(f,'namespace')?{namespace:val(f,'namespace')}:{}),
 dismiss:f=>send('POST',`/orchard/proposals/${f.dataset.id}/dismiss`),
};
document.addEventListener('click',async ev=>{const b=ev.target.closest('button[data-action]');
 if(!b)return;ev.preventDefault();const f=b.closest('form');
 const [status,d]=await actions[b.dataset.action](f);
 if(status<300){location.reload();return}
 f.querySelector('.msg').textContent=`Error ${status}: `+
  (typeof d.detail==='string'?d.detail:JSON.stringify(d.detail||'request failed'));});
